/**
 * The LLM contract (DESIGN §4.1). These are `@earendil-works/pi-ai`'s native types, re-exported so
 * that the rest of the code depends on this module and never on the library directly.
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
 * changes become new user messages (DESIGN §4.1, §9).
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
  /** Aborts the upstream request; the stream then ends with `error(aborted)`. */
  abort(reason?: string): void;
  /** Fires when the stream is aborted. */
  readonly signal: AbortSignal;
}
