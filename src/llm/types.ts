/**
 * The LLM contract (docs/design.md §4.1). These are `@earendil-works/pi-ai`'s native types,
 * re-exported so that the rest of the code depends on this module and never on the library
 * directly.
 */
import type {
  AssistantMessageEvent,
  Context,
  AssistantMessage as PiAssistantMessage,
  ToolResultMessage as PiToolResultMessage,
  UserMessage as PiUserMessage,
} from "@earendil-works/pi-ai";

export type {
  AssistantMessage,
  ImageContent,
  JsonObject,
  JsonValue,
  StopReason,
  TextContent,
  ThinkingContent,
  Tool,
  ToolCall,
  ToolResultMessage,
  Usage,
  UserMessage,
} from "@earendil-works/pi-ai";

/**
 * One entry of conversation history. pi-ai's own `Message` also admits a `SystemMessage`; our
 * history never holds one, because the system prompt is rebuilt for every request and context
 * changes become new user messages (docs/design.md §4.1, §9).
 */
export type Message = PiUserMessage | PiAssistantMessage | PiToolResultMessage;

/**
 * A complete, stateless model request (pi-ai `Context`): the system prompt and tools are rebuilt
 * for each request, `messages` is the append-only history.
 */
export interface RequestMessages extends Context {
  systemPrompt: string;
  messages: Message[];
  tools: NonNullable<Context["tools"]>;
}

/**
 * A native stream event (pi-ai `AssistantMessageEvent`).
 *
 * Lifecycle: `start` first (unless the call failed before the provider answered, in which case
 * the stream holds only `error`), then per content block `*_start`, `*_delta`…, `*_end` with a
 * stable `contentIndex`, and exactly one terminal event: `done` (reason `stop | length |
 * toolUse`, carrying the complete `AssistantMessage`) or `error` (reason `error | aborted`).
 */
export type ResponseEvent = AssistantMessageEvent;

/**
 * Why a model call failed (failure-kind.ts): the provider's rate limit (429), overload (503, 529,
 * `overloaded_error`), a server error (5xx), no connection, the model cooling down after
 * repeated rate limits (model-health.ts), or anything else (a bad request, a refused key, a
 * broken response). All but `other` may be model- or provider-specific, so another model may
 * succeed (loop/model-route.ts).
 */
export type FailureKind =
  | "rate_limited"
  | "overloaded"
  | "server_error"
  | "connection"
  | "cooling_down"
  | "other";

/** The terminal events of a response stream. */
export type TerminalEvent = Extract<ResponseEvent, { type: "done" } | { type: "error" }>;

/**
 * The stream of one model call.
 *
 * Contract: once created it never throws; every failure arrives as a terminal `error` event.
 * Every event it hands out is a snapshot: its `partial` never changes afterwards. After the
 * terminal event, `recv()` resolves to `undefined`.
 */
export interface ResponseStream extends AsyncIterable<ResponseEvent> {
  /** The next event, or `undefined` once the terminal event has been handed out. */
  recv(): Promise<ResponseEvent | undefined>;
  /**
   * The next event if one has already arrived, without waiting; `undefined` otherwise (also
   * after the terminal event). Lets a reader take a burst of events in one go (issue #19).
   */
  poll(): ResponseEvent | undefined;
  /** Aborts the upstream request; the stream then ends with `error(aborted)`. */
  abort(this: LLMStream, reason?: string): void;
  /** Fires when the stream is aborted. */
  readonly signal: AbortSignal;
}

/**
 * The exact provider request of one model call, handed to `beforeSend` after the body is
 * serialised and before any byte goes upstream, so the store can save it (docs/design.md §7 step
 * 3). Holds no credentials: headers are not part of it.
 */
export interface ExactRequest {
  readonly callID: string;
  /** The configured model name. */
  readonly model: string;
  readonly method: string;
  readonly url: string;
  /** The serialised request body, exactly as sent. */
  readonly body: string;
  /** sha256 of the body's UTF-8 bytes, lowercase hex. */
  readonly bodyHash: string;
  /** True when `body` is a saved body sent again (`replay`), not one built for this call. */
  readonly replayed: boolean;
}

/**
 * What a stream keeps of its exact request: everything but the body, which only `beforeSend`
 * gets (to save it). A stream lives as long as the model answers; holding a 20–40 KB body that
 * long for every open stream was the largest single item of the server's memory per stream
 * (issue #19). The hash still identifies the bytes sent.
 */
export type SentRequest = Omit<ExactRequest, "body">;

/** One attempt at sending the request: the status it got, or why it failed; and the wait after it. */
export interface RequestAttempt {
  /** 1-based. */
  readonly attempt: number;
  readonly status?: number;
  /** Connection failure, when there was no response. */
  readonly error?: string;
  /** The wait before the next attempt, when there was one. */
  readonly retryDelayMs?: number;
}

import type { ModelOptions } from "./model-options.ts";
import type { Secret } from "./secret.ts";

export type { ModelOptions };

/** One model call as the runner starts it (from a loop `call_llm` command). */
export interface LLMCall {
  readonly callID: string;
  /** The configured model name. */
  readonly model: string;
  readonly request: RequestMessages;
  /** The conversation the call is made for (team mode: whose owner pays). */
  readonly conversationID: string;
  /**
   * Derives the provider prompt-cache key, stable across the conversation's calls: the
   * conversation's state `cacheKeyFrom` (a copy keeps its source's key), else `conversationID`.
   */
  readonly cacheKeyFrom?: string;
  /** The client's choices for this call: thinking, effort, max mode (model-options.ts). */
  readonly options?: ModelOptions;
  /** Aborting it aborts the call, like `LLMStream.abort()`. */
  readonly signal?: AbortSignal;
  /**
   * At most this many send attempts, when fewer than the retry policy's: a call that has a
   * fallback model gives up on its model sooner (loop/model-route.ts).
   */
  readonly maxAttempts?: number;
  /**
   * The key to send instead of the model's configured one (a team user's own key, docs/team.md).
   * A `Secret`: it never shows in a log or an error.
   */
  readonly apiKey?: Secret;
  /** A body saved by an earlier attempt of this call: it is sent byte for byte instead of a rebuilt one. */
  readonly replay?: { readonly body: string };
  /**
   * Awaited once, after the body is serialised and before anything is sent (on a replay too, with
   * `replayed: true`). If it rejects, nothing is sent and the stream ends with an `error` event
   * whose message is `beforeSend failed: <reason>`. An abort does not wait for it.
   */
  readonly beforeSend?: (exact: ExactRequest) => Promise<void>;
  /**
   * Called once if the call has to wait for a free call slot of its model (`maxConcurrent`,
   * model-health.ts) before its request is built, so that a caller waiting for `beforeSend` can
   * stop waiting at once instead of on a timer (runner/model-call.ts `prepare`).
   */
  readonly onQueued?: () => void;
}

/**
 * The stream of one model call, with what the call sent.
 *
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
export interface LLMStream extends ResponseStream {
  readonly callID: string;
  /**
   * What the call sent, once serialised, without the body (`SentRequest`: the body goes to
   * `beforeSend` only); `undefined` if the call failed before that.
   */
  readonly exactRequest: SentRequest | undefined;
  /** The send attempts so far (retries included). */
  readonly attempts: readonly RequestAttempt[];
  /**
   * The raw argument text of the tool call at `contentIndex`: its `toolcall_delta` fragments
   * concatenated, as received. History keeps only the parsed `ToolCall.arguments`.
   */
  toolCallArgumentsText(contentIndex: number): string | undefined;
}
