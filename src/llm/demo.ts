/**
 * The built-in `demo` model, offered when no provider is configured, so the server works with
 * no key at all. It runs on pi-ai's faux provider (no network) and streams through the same
 * `LLMStream` as real models.
 *
 * What it answers, from the last message of the request:
 * - a user message `/demo tool <name> <json arguments>`: a call of that tool (if the client
 *   offered it), so end-to-end tests can drive a tool round trip without a provider;
 * - a tool result: a short report of what the tool returned;
 * - anything else: a note that no provider is configured and how to add one.
 *
 * Its "exact request" is the request as JSON (there is no HTTP body, and so no `attempts`); it
 * goes through `beforeSend` like a real body, and a replayed body is passed on unchanged.
 */
import {
  type AssistantMessage,
  type AssistantMessageEvent,
  fauxAssistantMessage,
  fauxProvider,
  fauxText,
  fauxToolCall,
  type JsonObject,
  normalizeContext,
} from "@earendil-works/pi-ai";
import { describeError, untilAborted } from "./abort.ts";
import type { ModelPrices } from "./config.ts";
import { toErrorMessage } from "./error-message.ts";
import type { ExactFetchState } from "./exact-fetch.ts";
import { hashBody, toSentRequest } from "./exact-fetch.ts";
import type { LLMCall, Message, RequestMessages } from "./types.ts";

export const DEMO_MODEL_NAME = "demo";
export const DEMO_PROVIDER = "cursor-byok";
export const DEMO_API = "cursor-byok-demo";
const DEMO_CONTEXT_WINDOW = 128_000;
const DEMO_MAX_OUTPUT = 4_096;
const FREE: ModelPrices = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

export const DEFAULT_DEMO_HELP = [
  "No model provider is configured, so cursor-byok's built-in demo model is answering.",
  "",
  "To use your own key, configure at least one model (OpenAI, Anthropic, Gemini, or any",
  "OpenAI-compatible endpoint such as OpenRouter, DeepSeek, Ollama, LM Studio or vLLM) with",
  "its API key, then restart cursor-byok. The README describes the configuration.",
  "",
  "Tip: send `/demo tool <name> <json arguments>` to make the demo model call a tool.",
].join("\n");

export interface DemoOptions {
  /** The reply to an ordinary message. */
  readonly help?: string;
  /** Pace of the reply; 0 or absent streams as fast as possible. */
  readonly tokensPerSecond?: number;
}

export interface DemoModel {
  readonly name: string;
  readonly provider: string;
  readonly contextWindow: number;
  readonly maxOutput: number;
  readonly prices: ModelPrices;
  /** The pi-ai events of one call; `state` records the exact request. */
  events(
    call: LLMCall,
    signal: AbortSignal,
    state: ExactFetchState,
  ): AsyncIterable<AssistantMessageEvent>;
}

export function createDemoModel(options: DemoOptions = {}): DemoModel {
  const faux = fauxProvider({
    api: DEMO_API,
    provider: DEMO_PROVIDER,
    models: [
      {
        id: DEMO_MODEL_NAME,
        name: "Demo (no provider configured)",
        reasoning: false,
        input: ["text"],
        contextWindow: DEMO_CONTEXT_WINDOW,
        maxTokens: DEMO_MAX_OUTPUT,
      },
    ],
    ...(options.tokensPerSecond === undefined ? {} : { tokensPerSecond: options.tokensPerSecond }),
  });
  const model = faux.getModel();
  const help = options.help ?? DEFAULT_DEMO_HELP;

  async function* events(
    call: LLMCall,
    signal: AbortSignal,
    state: ExactFetchState,
  ): AsyncIterable<AssistantMessageEvent> {
    const body = call.replay?.body ?? toDemoBody(call.request);
    const exact = Object.freeze({
      callID: call.callID,
      model: call.model,
      method: "POST",
      url: `faux://${DEMO_PROVIDER}/${DEMO_MODEL_NAME}`,
      body,
      bodyHash: hashBody(body),
      replayed: call.replay !== undefined,
    });
    state.exact = toSentRequest(exact);
    if (call.beforeSend !== undefined) {
      try {
        await untilAborted(call.beforeSend(exact), signal);
      } catch (error) {
        const reason = signal.aborted ? "aborted" : "error";
        if (reason === "error") state.hookFailure = describeError(error);
        const message = reason === "aborted" ? "Request was aborted" : "beforeSend failed";
        yield {
          type: "error",
          reason,
          error: toErrorMessage({
            api: DEMO_API,
            provider: DEMO_PROVIDER,
            model: model.id,
            reason,
            errorMessage: message,
            timestamp: Date.now(),
          }),
        };
        return;
      }
    }
    // The faux provider takes its reply from a queue when the call starts, synchronously.
    faux.setResponses([toDemoReply(call, help)]);
    yield* faux.provider.streamSimple(model, normalizeContext(call.request), { signal });
  }

  return {
    name: DEMO_MODEL_NAME,
    provider: DEMO_PROVIDER,
    contextWindow: DEMO_CONTEXT_WINDOW,
    maxOutput: DEMO_MAX_OUTPUT,
    prices: FREE,
    events,
  };
}

/** The demo's answer to a request. */
export function toDemoReply(call: LLMCall, help: string): AssistantMessage {
  const last = call.request.messages.at(-1);
  if (last?.role === "toolResult") {
    const output = last.content
      .map((block) => (block.type === "text" ? block.text : "[image]"))
      .join("\n");
    const excerpt = output.length > 500 ? `${output.slice(0, 500)}…` : output;
    const verdict = last.isError ? "failed" : "returned";
    return fauxAssistantMessage(`The \`${last.toolName}\` tool ${verdict}:\n\n${excerpt}`);
  }
  const command = last === undefined ? undefined : parseToolCommand(last);
  if (command === undefined) return fauxAssistantMessage(help);
  if (command.type === "invalid") return fauxAssistantMessage(command.reason);
  const offered = call.request.tools.map((tool) => tool.name);
  if (!offered.includes(command.name)) {
    return fauxAssistantMessage(
      `The client offered no tool named \`${command.name}\`. Offered: ${offered.join(", ") || "none"}.`,
    );
  }
  const id = `demo_${hashBody(call.callID).slice(0, 16)}`;
  return fauxAssistantMessage(
    [
      fauxText(`Calling \`${command.name}\`.`),
      fauxToolCall(command.name, command.arguments, { id }),
    ],
    { stopReason: "toolUse" },
  );
}

type ToolCommand =
  | { readonly type: "call"; readonly name: string; readonly arguments: JsonObject }
  | { readonly type: "invalid"; readonly reason: string };

const USAGE =
  'Usage: `/demo tool <name> <json arguments>`, e.g. `/demo tool read_file {"path":"README.md"}`.';

function parseToolCommand(message: Message): ToolCommand | undefined {
  if (message.role !== "user") return undefined;
  // The user's own words are the last text block: context blocks come before them.
  const text =
    typeof message.content === "string"
      ? message.content
      : (message.content.filter((block) => block.type === "text").at(-1)?.text ?? "");
  const match = /^\s*\/demo\s+tool(?:\s+(\S+))?(?:\s+([\s\S]*))?$/.exec(text);
  if (match === null) return undefined;
  const name = match[1];
  if (name === undefined) return { type: "invalid", reason: USAGE };
  const argumentText = match[2]?.trim() || "{}";
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentText);
  } catch {
    return { type: "invalid", reason: `The arguments are not valid JSON. ${USAGE}` };
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return { type: "invalid", reason: `The arguments must be a JSON object. ${USAGE}` };
  }
  return { type: "call", name, arguments: parsed as JsonObject };
}

/** Deterministic stand-in for a provider body: the request as JSON, in a fixed key order. */
function toDemoBody(request: RequestMessages): string {
  return JSON.stringify({
    model: DEMO_MODEL_NAME,
    systemPrompt: request.systemPrompt,
    tools: request.tools,
    messages: request.messages,
  });
}
