/**
 * The request rules real providers enforce on the history part of a body, for the fake provider:
 * a request that breaks one gets the provider's own 400 error instead of a scripted reply, so a
 * test whose history the real API would refuse fails (a fake that accepts anything proves
 * nothing). Only rules the providers document or are known to enforce with a 400 are here; the
 * error texts follow theirs.
 *
 * The dialect is read from the path: `/messages` (Anthropic Messages), `/responses` (OpenAI
 * Responses), `/chat/completions` (Chat Completions; OpenAI's own 40-character limit on tool call
 * ids only under `/v1/`, where the tests put OpenAI itself; elsewhere an OpenAI-compatible server
 * with the strictest chat template in wide use, which wants alternating roles, and DeepSeek's
 * rule for thinking mode when the body turns it on),
 * `:streamGenerateContent` (Gemini).
 */
import type { FakeReply } from "./fake-provider.ts";

type JsonRecord = Record<string, unknown>;

/** Gemini's documented placeholder for a call no Gemini model signed (a switch, an import). */
export const GEMINI_SKIP_SIGNATURE = "skip_thought_signature_validator";

/** The 400 reply a real provider gives this request, or null when it breaks no rule here. */
export function findRuleBreak(url: string, bodyText: string): FakeReply | null {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return null; // not ours to judge (e.g. an empty probe); the scripted reply decides
  }
  if (!isRecord(body)) return null;
  const path = url.split("?")[0] ?? "";
  if (path.endsWith("/messages")) return anthropicReply(anthropicProblem(body));
  if (path.endsWith("/responses")) return openAIReply(responsesProblem(body));
  if (path.endsWith("/chat/completions")) {
    const openAIItself = path.startsWith("/v1/");
    const problem = chatProblem(body, openAIItself) ?? deepSeekProblem(body);
    if (problem !== null || openAIItself) return openAIReply(problem);
    return templateReply(templateProblem(body));
  }
  const gemini = /\/models\/([^/:]+):streamGenerateContent$/.exec(path);
  if (gemini !== null) return geminiReply(geminiProblem(body, gemini[1] ?? ""));
  return null;
}

// ---------------------------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------------------------

const ANTHROPIC_ID = /^[a-zA-Z0-9_-]+$/;

/**
 * Claude models that refuse a request ending with an assistant message: 4.6 and later, of any
 * family (Anthropic's "What's new in Claude 4.6": prefill removed). Names of the form
 * `claude-<family>-<major>[-<minor>]`, the minor of one or two digits (`claude-opus-4-20250514`
 * is 4.0); the older `claude-3-5-sonnet` form is earlier and accepts a prefill.
 */
const CLAUDE_VERSION = /^claude-[a-z]+-(\d+)(?:-(\d{1,2})(?!\d))?/;

function refusesPrefill(model: string): boolean {
  const match = CLAUDE_VERSION.exec(model);
  if (match === null) return false;
  const major = Number(match[1]);
  return major > 4 || (major === 4 && Number(match[2] ?? 0) >= 6);
}

function anthropicProblem(body: JsonRecord): string | null {
  const messages = records(body.messages);
  const seen = new Set<string>();
  let usesTools = false;
  if (messages[0] !== undefined && messages[0].role !== "user") {
    return 'messages: first message must use the "user" role';
  }
  for (const [i, message] of messages.entries()) {
    const content = message.content;
    if (typeof content === "string") {
      if (content.trim() === "")
        return "messages: text content blocks must contain non-whitespace text";
      continue;
    }
    const blocks = records(content);
    if (blocks.length === 0)
      return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    for (const [j, block] of blocks.entries()) {
      if (block.type === "text" && String(block.text ?? "").trim() === "") {
        return "messages: text content blocks must contain non-whitespace text";
      }
      if (block.type === "tool_use") {
        usesTools = true;
        const id = String(block.id ?? "");
        if (!ANTHROPIC_ID.test(id)) {
          return `messages.${i}.content.${j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
        }
        if (seen.has(id)) return `messages.${i}.content.${j}: \`tool_use\` ids must be unique`;
        seen.add(id);
      }
      if (block.type === "tool_result") {
        usesTools = true;
        const result = block.content;
        const empty =
          result === undefined || result === "" || (Array.isArray(result) && result.length === 0);
        if (block.is_error === true && empty) {
          return `messages.${i}.content.${j}.tool_result: content cannot be empty if \`is_error\` is true`;
        }
        const previous = records(messages[i - 1]?.content);
        const id = String(block.tool_use_id ?? "");
        if (!previous.some((b) => b.type === "tool_use" && b.id === id)) {
          return (
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. ` +
            "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
          );
        }
      }
    }
    const calls = blocks.filter((b) => b.type === "tool_use").map((b) => String(b.id));
    if (calls.length === 0) continue;
    const next = messages[i + 1];
    const answered = new Set(
      records(next?.content)
        .filter((b) => b.type === "tool_result")
        .map((b) => String(b.tool_use_id)),
    );
    const missing = calls.filter((id) => !answered.has(id));
    // The last message may end with calls only when it is the assistant's own prefill.
    if (missing.length > 0 && next !== undefined) {
      return (
        `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ` +
        `${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`
      );
    }
  }
  const thinking = isRecord(body.thinking) ? body.thinking.type : undefined;
  const last = messages.at(-1);
  const final = messages.at(-2);
  const endsWithResults =
    last?.role === "user" &&
    records(last.content).length > 0 &&
    records(last.content).every((b) => b.type === "tool_result");
  // Budget thinking: the assistant message whose calls the request ends answering must start
  // with its thinking (adaptive thinking may skip a step's thinking, so it is not checked).
  if (thinking === "enabled" && endsWithResults && final?.role === "assistant") {
    const first = records(final.content)[0];
    if (first?.type !== "thinking" && first?.type !== "redacted_thinking") {
      return (
        `messages.${messages.length - 2}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, ` +
        `but found \`${String(first?.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message ` +
        "must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` " +
        "blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, " +
        "disable `thinking`. Please consult our documentation at " +
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
      );
    }
  }
  // A request ending with an assistant message asks the model to continue it (a prefill):
  // with budget thinking it must start with thinking, and Claude 4.6 and later refuse it.
  if (last?.role === "assistant" && !endsWithResults) {
    const first = records(last.content)[0];
    const startsWithThinking = first?.type === "thinking" || first?.type === "redacted_thinking";
    if (thinking === "enabled" && !startsWithThinking && first !== undefined) {
      return (
        `messages.${messages.length - 1}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, ` +
        `but found \`${String(first.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message ` +
        "must start with a thinking block. We recommend you include thinking blocks from previous turns. " +
        "To avoid this requirement, disable `thinking`. Please consult our documentation at " +
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
      );
    }
    if (refusesPrefill(String(body.model ?? ""))) {
      return "This model does not support assistant message prefill. The conversation must end with a user message.";
    }
  }
  if (usesTools && records(body.tools).length === 0) {
    return "Requests which include `tool_use` or `tool_result` blocks must define tools.";
  }
  return null;
}

function anthropicReply(message: string | null): FakeReply | null {
  if (message === null) return null;
  return status400({
    type: "error",
    error: { type: "invalid_request_error", message },
    request_id: "req_011CVfakeProviderRules",
  });
}

// ---------------------------------------------------------------------------------------------
// OpenAI Responses
// ---------------------------------------------------------------------------------------------

interface OpenAIProblem {
  readonly message: string;
  readonly param: string | null;
  readonly code: string | null;
}

function responsesProblem(body: JsonRecord): OpenAIProblem | null {
  const items = records(body.input);
  const calls = new Set<string>();
  const outputs = new Set<string>();
  for (const [i, item] of items.entries()) {
    const id = item.id;
    if (typeof id === "string") {
      const prefix = ITEM_PREFIXES[String(item.type)];
      if (prefix !== undefined && !id.startsWith(prefix)) {
        return {
          message: `Invalid 'input[${i}].id': '${id}'. Expected an ID that begins with '${prefix}'.`,
          param: `input[${i}].id`,
          code: "invalid_value",
        };
      }
      if (id.length > 64) return tooLong(`input[${i}].id`, 64, id.length);
    }
    if (item.type === "function_call") {
      const callID = String(item.call_id ?? "");
      if (callID === "") return missingParam(`input[${i}].call_id`);
      calls.add(callID);
    }
    if (item.type === "function_call_output") {
      const callID = String(item.call_id ?? "");
      if (!calls.has(callID)) {
        return {
          message: `No tool call found for function call output with call_id ${callID}.`,
          param: "input",
          code: null,
        };
      }
      outputs.add(callID);
    }
  }
  // Without previous_response_id every call of the input needs its output in the input.
  if (body.previous_response_id === undefined) {
    for (const callID of calls) {
      if (!outputs.has(callID)) {
        return {
          message: `No tool output found for function call ${callID}.`,
          param: "input",
          code: null,
        };
      }
    }
  }
  return null;
}

const ITEM_PREFIXES: Readonly<Record<string, string>> = {
  function_call: "fc",
  message: "msg",
  reasoning: "rs",
};

// ---------------------------------------------------------------------------------------------
// Chat Completions
// ---------------------------------------------------------------------------------------------

function chatProblem(body: JsonRecord, openAIItself: boolean): OpenAIProblem | null {
  const messages = records(body.messages);
  let waiting: string[] = [];
  let waitingAt = -1;
  for (const [i, message] of messages.entries()) {
    if (message.role === "tool") {
      const id = String(message.tool_call_id ?? "");
      if (!waiting.includes(id)) {
        return {
          message:
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          param: `messages.[${i}].role`,
          code: null,
        };
      }
      waiting = waiting.filter((w) => w !== id);
      continue;
    }
    if (waiting.length > 0) return unanswered(waitingAt, waiting);
    if (message.role !== "assistant") continue;
    const calls = records(message.tool_calls);
    for (const [j, call] of calls.entries()) {
      const id = String(call.id ?? "");
      if (openAIItself && id.length > 40) {
        return tooLong(`messages[${i}].tool_calls[${j}].id`, 40, id.length);
      }
    }
    waiting = calls.map((call) => String(call.id ?? ""));
    waitingAt = i;
  }
  return waiting.length > 0 ? unanswered(waitingAt, waiting) : null;
}

/**
 * DeepSeek in thinking mode (`thinking: {type: "enabled"}`, a body only DeepSeek's dialect
 * has): every assistant message of the history must carry `reasoning_content` (an empty string
 * will do), text-only answers as well as tool calls. DeepSeek documents it for tool-call turns
 * (api-docs.deepseek.com/guides/thinking_mode); for text-only answers it is known from refused
 * requests (openclaw/openclaw#73417, NousResearch/hermes-agent#15770), which pi-ai's
 * `requiresReasoningContentOnAssistantMessages` answers with `""` on every one.
 */
function deepSeekProblem(body: JsonRecord): OpenAIProblem | null {
  if (!isRecord(body.thinking) || body.thinking.type !== "enabled") return null;
  const missing = records(body.messages).some(
    (message) => message.role === "assistant" && typeof message.reasoning_content !== "string",
  );
  if (!missing) return null;
  return {
    message: "The `reasoning_content` in the thinking mode must be passed back to the API.",
    param: null,
    code: "invalid_request_error",
  };
}

/**
 * The role check of Mistral's chat templates (Mistral 7B Instruct v0.3 and later on vLLM or
 * llama.cpp; Gemma's and Llama 2's check the same without the tool messages): once system
 * messages, tool results and assistant messages with tool calls are set aside, the roles must
 * alternate user/assistant, starting with a user message (vllm-project/vllm#6862).
 */
function templateProblem(body: JsonRecord): string | null {
  let expected = "user";
  for (const message of records(body.messages)) {
    const role = message.role;
    if (role === "system" || role === "developer" || role === "tool") continue;
    if (role === "assistant" && records(message.tool_calls).length > 0) continue;
    if (role !== expected) {
      return "After the optional system message, conversation roles must alternate user/assistant/user/assistant/...";
    }
    expected = expected === "user" ? "assistant" : "user";
  }
  return null;
}

/** vLLM's reply to a template error. */
function templateReply(message: string | null): FakeReply | null {
  if (message === null) return null;
  return status400({ error: { message, type: "BadRequestError", param: null, code: 400 } });
}

function unanswered(index: number, ids: readonly string[]): OpenAIProblem {
  return {
    message:
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each " +
      `'tool_call_id'. The following tool_call_ids did not have response messages: ${ids.join(", ")}`,
    param: `messages.[${index}].role`,
    code: null,
  };
}

function tooLong(param: string, max: number, length: number): OpenAIProblem {
  return {
    message: `Invalid '${param}': string too long. Expected a string with maximum length ${max}, but got a string with length ${length} instead.`,
    param,
    code: "string_above_max_length",
  };
}

function missingParam(param: string): OpenAIProblem {
  return {
    message: `Missing required parameter: '${param}'.`,
    param,
    code: "missing_required_parameter",
  };
}

function openAIReply(problem: OpenAIProblem | null): FakeReply | null {
  if (problem === null) return null;
  return status400({ error: { ...problem, type: "invalid_request_error" } });
}

// ---------------------------------------------------------------------------------------------
// Gemini
// ---------------------------------------------------------------------------------------------

const GEMINI_NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/;

function geminiProblem(body: JsonRecord, model: string): string | null {
  const contents = records(body.contents);
  const parts = (content: JsonRecord | undefined) => records(content?.parts);
  const calls = (content: JsonRecord | undefined) =>
    parts(content).filter((part) => isRecord(part.functionCall));
  const responses = (content: JsonRecord | undefined) =>
    parts(content).filter((part) => isRecord(part.functionResponse));
  for (const [i, content] of contents.entries()) {
    const previous = contents[i - 1];
    // An empty text part (Vertex words it "Unable to submit request because it has an empty
    // text parameter"). A part with only a thought signature is Gemini 3's own, which pi-ai
    // echoes; not documented as refused.
    const empty = parts(content).findIndex(
      (part) => part.text === "" && part.thoughtSignature === undefined,
    );
    if (empty >= 0) {
      return (
        `* GenerateContentRequest.contents[${i}].parts[${empty}].data: required oneof field ` +
        "'data' must have one initialized field"
      );
    }
    for (const part of calls(content)) {
      const name = String((part.functionCall as JsonRecord).name ?? "");
      if (!GEMINI_NAME.test(name)) {
        return (
          "* GenerateContentRequest.contents[" +
          `${i}].parts.functionCall.name: Invalid function name. Must start with a letter or an underscore. ` +
          "Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64."
        );
      }
    }
    if (calls(content).length > 0) {
      const after = previous === undefined ? "user" : previous.role;
      const afterResponses = responses(previous).length > 0;
      if (after !== "user" && !afterResponses) {
        return "Please ensure that function call turn comes immediately after a user turn or after a function response turn.";
      }
    }
    if (responses(content).length > 0) {
      if (calls(previous).length === 0) {
        return "Please ensure that function response turn comes immediately after a function call turn.";
      }
      if (responses(content).length !== calls(previous).length) {
        return (
          "Please ensure that the number of function response parts is equal to the number of function " +
          "call parts of the function call turn."
        );
      }
    }
  }
  if (geminiMajor(model) >= 3) {
    // The current turn: from the last user content that is not only function responses.
    let start = 0;
    for (const [i, content] of contents.entries()) {
      if (content.role === "user" && parts(content).some((p) => !isRecord(p.functionResponse))) {
        start = i;
      }
    }
    for (const [i, content] of contents.entries()) {
      if (i < start || content.role !== "model") continue;
      const first = calls(content)[0];
      if (first === undefined) continue;
      const signature = first.thoughtSignature;
      if (typeof signature !== "string" || signature === "") {
        const name = String((first.functionCall as JsonRecord).name);
        return (
          "Function call is missing a thought_signature in functionCall parts. This is required for tools " +
          "to work correctly, and missing thought_signature may lead to degraded model performance. " +
          `Additional data, function call \`default_api:${name}\` , position ${i + 1}. Please refer to ` +
          "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
        );
      }
    }
  }
  return null;
}

function geminiMajor(model: string): number {
  const match = /^gemini-(\d+)/.exec(model);
  return match === null ? 0 : Number(match[1]);
}

function geminiReply(message: string | null): FakeReply | null {
  if (message === null) return null;
  return status400({ error: { code: 400, message, status: "INVALID_ARGUMENT" } });
}

// ---------------------------------------------------------------------------------------------

function status400(body: JsonRecord): FakeReply {
  return { type: "status", status: 400, body: JSON.stringify(body) };
}

function records(value: unknown): JsonRecord[] {
  return Array.isArray(value) ? value.filter(isRecord) : [];
}

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
