/**
 * Turns every API accepts, for the few histories that hold a turn with nothing to send
 * (README.md "Empty messages and turns without a reply").
 *
 * History is append-only and sent as it is (docs/design.md §9); two things in it are refused by
 * some providers on every later request of the conversation, so the request gets a stand-in:
 *
 * - **Blank text**: a user message or tool result with no image and no text but white space (a
 *   message of spaces or line breaks from the client, a tool that printed nothing). pi-ai drops
 *   such a user message for Anthropic (which refuses blank text), so the request ends with an
 *   assistant message (refused with thinking on, and by Claude 4.6 and later as a prefill) or
 *   holds no message at all; Gemini refuses an empty text part;
 *   Anthropic refuses an error result with empty content. Such a message goes out as
 *   `EMPTY_USER_TEXT` (a result as `EMPTY_TOOL_RESULT_TEXT`), for every API; blank text blocks
 *   beside other content are left out.
 * - **A user message that follows another one with no reply between them**: a turn that failed
 *   or was canceled before the model finished its answer appends nothing (src/loop/README.md
 *   L14, L15, L20, L43, L46), a turn cut off after tool results ends with them (L12, L26), and
 *   pi-ai leaves out an assistant message with nothing it can send (only white space, another
 *   model's thinking).
 *   OpenAI, Anthropic (which joins the two) and Gemini accept that; chat templates that insist
 *   on alternating roles (Mistral's and Gemma's on vLLM or llama.cpp: "conversation roles must
 *   alternate user/assistant/user/assistant/...") refuse it. For OpenAI-compatible endpoints
 *   only, an assistant message `NO_REPLY_TEXT` goes in before the second user message, as a
 *   message of the history pi-ai converts (so the model's own rules for assistant messages
 *   apply to it too).
 *
 * Both depend only on the message concerned and the ones before it, and insert nothing after
 * the last message, so request n stays a byte prefix of request n+1 (nothing earlier is
 * rewritten). A conversation without such turns is sent exactly as before: the same objects.
 */
import type { Api, Model } from "@earendil-works/pi-ai";
import type { ApiKind } from "./config.ts";
import { toZeroUsage } from "./error-message.ts";
import type {
  AssistantMessage,
  ImageContent,
  Message,
  RequestMessages,
  TextContent,
} from "./types.ts";

/** What a user message with nothing to send goes out as. */
export const EMPTY_USER_TEXT = "(empty message)";

/** What a tool result with nothing to send goes out as (pi-ai's own text on Chat Completions). */
export const EMPTY_TOOL_RESULT_TEXT = "(no tool output)";

/** The assistant message between two user messages that had no reply between them. */
export const NO_REPLY_TEXT = "(no reply: the turn ended before an answer)";

const NON_SPACE = /\S/;

type Block = TextContent | ImageContent;

/**
 * `request`, or a copy in which user messages and tool results carry no blank text block: one
 * with nothing else goes out as `EMPTY_USER_TEXT` (`EMPTY_TOOL_RESULT_TEXT`), and from one with
 * an image or other text the blank blocks are left out.
 */
export function withSendableMessages(request: RequestMessages): RequestMessages {
  const messages = request.messages;
  let out: Message[] | null = null;
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index] as Message;
    const next = toSendable(message);
    if (next !== message) {
      out ??= messages.slice(0, index);
      out.push(next);
    } else if (out !== null) {
      out.push(message);
    }
  }
  return out === null ? request : { ...request, messages: out };
}

function toSendable(message: Message): Message {
  switch (message.role) {
    case "user": {
      const content = message.content;
      if (typeof content === "string") {
        return NON_SPACE.test(content) ? message : { ...message, content: EMPTY_USER_TEXT };
      }
      // No block at all is as blank as white space (pi-ai leaves such a message out).
      if (content.length > 0 && !content.some(isBlank)) return message;
      const kept = content.filter((block) => !isBlank(block));
      return { ...message, content: kept.length === 0 ? EMPTY_USER_TEXT : kept };
    }
    case "toolResult": {
      const content = message.content;
      if (content.length > 0 && !content.some(isBlank)) return message;
      const kept = content.filter((block) => !isBlank(block));
      return {
        ...message,
        content: kept.length === 0 ? [{ type: "text", text: EMPTY_TOOL_RESULT_TEXT }] : kept,
      };
    }
    default:
      return message;
  }
}

/** A text block of white space only. */
function isBlank(block: Block): boolean {
  return block.type === "text" && !NON_SPACE.test(block.text);
}

/**
 * A copy of `request` with an assistant message `NO_REPLY_TEXT` before each user message that
 * follows another one with no reply between them, for OpenAI-compatible endpoints; `request`
 * itself when there is none (or for another API). What counts is what the strictest chat
 * templates check on the Chat Completions body pi-ai builds from these messages: the roles left
 * once tool results and assistant messages with tool calls are set aside must alternate,
 * starting with a user message.
 *
 * The stand-in is a message of the history pi-ai converts, an answer of the current `model`, so
 * pi-ai shapes it under the model's own rules like any other assistant message (DeepSeek with
 * thinking: `reasoning_content: ""` on every assistant message, which the API requires). It
 * depends only on the current model and the messages before it.
 *
 * Which assistant messages count as a reply follows pi-ai 1.6's Chat Completions conversion
 * (transform-messages.js, openai-completions.js `convertMessages`): it leaves out one that
 * ended in an error or was aborted, and one with no tool call and no text but white space (its
 * thinking only counts as text under `requiresThinkingAsText`, and only the same model's); under
 * `requiresAssistantAfterToolResult` pi-ai itself puts an assistant message between tool results
 * and a user message. The test "the stand-in follows pi-ai's Chat conversion" checks this
 * against pi-ai's own body.
 */
export function withAlternatingRoles(
  api: ApiKind,
  model: Model<Api>,
  request: RequestMessages,
): RequestMessages {
  if (api !== "openai-compatible") return request;
  const compat: ChatCompat = (model as Model<"openai-completions">).compat ?? {};
  const thinkingAsText = compat.requiresThinkingAsText === true;
  const bridgesResults = compat.requiresAssistantAfterToolResult === true;
  const messages = request.messages;
  let out: Message[] | null = null;
  /** Whether a user message came after the last assistant reply (one without tool calls). */
  let awaitingReply = false;
  /** Whether the last message pi-ai sends is a tool result (pi-ai's own `lastRole`). */
  let afterResults = false;
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index] as Message;
    switch (message.role) {
      case "user":
        // pi-ai's own bridge ("I have processed the tool results.") is the reply.
        if (bridgesResults && afterResults) awaitingReply = false;
        if (awaitingReply) {
          out ??= messages.slice(0, index);
          out.push(toNoReply(model, message.timestamp));
        }
        awaitingReply = true;
        afterResults = false;
        break;
      case "assistant": {
        const sent = toChatReply(message, model, thinkingAsText);
        if (sent === "left out") break;
        if (sent === "answer") awaitingReply = false;
        // A call without results gets pi-ai's stand-in result before the next message.
        afterResults = sent === "calls";
        break;
      }
      case "toolResult":
        afterResults = true;
        break;
    }
    if (out !== null) out.push(message);
  }
  return out === null ? request : { ...request, messages: out };
}

/** The compat settings of pi-ai's Chat Completions that decide what counts as a reply. */
interface ChatCompat {
  readonly requiresThinkingAsText?: boolean | undefined;
  readonly requiresAssistantAfterToolResult?: boolean | undefined;
}

/**
 * What pi-ai's Chat Completions conversion makes of this assistant message for `model`: nothing,
 * a message with tool calls, or an answer (text, or the model's own thinking sent as text).
 */
function toChatReply(
  message: AssistantMessage,
  model: Model<Api>,
  thinkingAsText: boolean,
): "left out" | "calls" | "answer" {
  if (message.stopReason === "error" || message.stopReason === "aborted") return "left out";
  // pi-ai reads a missing content (an old or hand-built history) as no content.
  const content: AssistantMessage["content"] = message.content ?? [];
  let sent = false;
  for (const block of content) {
    if (block.type === "toolCall") return "calls";
    if (sent) continue;
    if (block.type === "text") sent = NON_SPACE.test(block.text);
    else if (thinkingAsText && NON_SPACE.test(block.thinking)) sent = isSameModel(message, model);
  }
  return sent ? "answer" : "left out";
}

function isSameModel(message: AssistantMessage, model: Model<Api>): boolean {
  return (
    message.provider === model.provider && message.api === model.api && message.model === model.id
  );
}

/** The stand-in reply: an answer of the current model, so pi-ai sends it as one of its own. */
function toNoReply(model: Model<Api>, timestamp: number): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text: NO_REPLY_TEXT }],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: toZeroUsage(),
    stopReason: "stop",
    timestamp,
  };
}
