/**
 * The per-turn protocol state of the dialect: what the wire needs beyond the loop's state (exec
 * ids, which exec belongs to which tool call, thinking start times, usage for `turn_ended`, the
 * steps of the turn for checkpoints). Plain data passed in and returned by the codecs — never
 * module-level state — and structuredClone-able (protobuf-es messages are plain objects).
 * One value per turn (one request id / RunSSE stream).
 */
import type { JsonObject, Usage } from "../../llm/types.ts";
import type { ContextSupplement } from "../../loop/index.ts";
import type { AgentMode, TodoItem } from "./gen/agent/v1/common_pb.js";
import type {
  ConversationStateStructure,
  ConversationStep,
} from "./gen/agent/v1/conversation_state_pb.js";
import type { ToolCall } from "./gen/agent/v1/tool_call_pb.js";
import type { UserMessage as CursorUserMessage } from "./gen/agent/v1/user_message_pb.js";
import type { Mode } from "./mode.ts";
import type { McpToolRef } from "./tools/mcp.ts";
import type { WebOffer } from "./tools/server-work.ts";

/** Token usage summed over the model calls of a turn, for `turn_ended`. */
export interface TurnUsage {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly reasoning: number;
}

export const ZERO_USAGE: TurnUsage = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  reasoning: 0,
};

/** What the client is waiting on for the open tool call. */
export type Awaiting =
  | { readonly type: "exec"; readonly id: number; readonly execID: string }
  | { readonly type: "query"; readonly id: number }
  /** Work the server runs itself (web tools); `id` tells a late result from the current one. */
  | { readonly type: "server"; readonly id: number }
  /**
   * Only a late reply to the exec an earlier server process sent (see `OpenToolCall.recovered`):
   * nothing was sent again, because the tool has effects and must not run twice.
   */
  | { readonly type: "earlier" };

/**
 * A tool call being run on the client. Several may be open at once (a batch of read-only calls,
 * src/loop/tool-batch.ts): each has its own exec ids, and replies are matched to it by them.
 */
export interface OpenToolCall {
  readonly operationID: string;
  readonly toolCallID: string;
  readonly toolName: string;
  /** The model call that produced this tool call. */
  readonly modelCallID: string;
  /** The arguments exactly as the model gave them. */
  readonly arguments: JsonObject;
  /** Parsed arguments (the handler's own plain-data type). */
  readonly args: unknown;
  readonly stage: string;
  readonly data: unknown;
  readonly awaiting: Awaiting;
  readonly startedAt: number;
  /**
   * Set when an earlier server process sent this call and no result was saved (it restarted):
   * a late reply to that earlier exec is still accepted, recognised by its exec id (derived from
   * the operation id, `toExecID`) and by the kind of result the current stage expects. Cleared
   * once the call moves on to a request of this process.
   */
  readonly recovered: { readonly resultCase: string } | null;
  /** Set for a subagent's call: the parent's task call (its step is not the turn's). */
  readonly taskCallID?: string;
}

/** A tool call whose arguments are still streaming in from the model. */
export interface StreamingToolCall {
  readonly contentIndex: number;
  readonly toolCallID: string;
  readonly toolName: string;
  /**
   * The UI form sent with each of its `partial_tool_call`s, made once for the call: finding the
   * tool lists the catalogue with the client's MCP tools, ≈10 µs per argument delta with 20 of
   * them (issue #19).
   */
  readonly preview: ToolCall;
}

/** A turn's user message and steps: serialized messages, or their 32-byte blob ids. */
export interface TurnParts {
  readonly userMessage: Uint8Array;
  readonly steps: readonly Uint8Array[];
}

/** The last turn of a client's checkpoint, read (carried-turn.ts). */
export interface CarriedTurn {
  /** The turn's `request_id`. */
  readonly requestID: string;
  /** The turn's entry in the client's `turns`, as sent (inline bytes or a blob id). */
  readonly entry: Uint8Array;
  /**
   * Blob form: the ids of its user message and step blobs, which the client's store holds; null
   * for an inline turn (its parts are then written as blobs when the stream sends the blob form).
   */
  readonly ids: TurnParts | null;
  /**
   * The serialized user message and steps: an inline turn's own, or a blob turn's blobs when the
   * client sent every one back; null otherwise (the inline form of the checkpoint, a fallback,
   * then keeps the client's entry as it is and adds the stream's part after it).
   */
  readonly bytes: TurnParts | null;
}

export type LastClientTurn =
  | { readonly type: "read"; readonly turn: CarriedTurn }
  /**
   * A blob-form last turn whose blob the request did not carry (hex id), with its request id
   * when this process wrote that blob (turn-blob-origins.ts).
   */
  | { readonly type: "unresolved"; readonly blob: string; readonly requestID?: string }
  /** No turns, or a last turn that is not an agent turn or does not decode. */
  | { readonly type: "none" };

export interface TurnState {
  readonly conversationID: string;
  /**
   * The client's id of this turn, recorded in the turn structure of its checkpoints: the request
   * id of the run request that started it. A stream that carries a turn it did not start (a
   * resume request, a stream picked up after a restart) takes it from the turn's record
   * (loop/turn-record.ts) once the runner gives it the turn; its own id until then.
   */
  readonly requestID: string;
  readonly mode: Mode;
  /** The wire mode recorded in checkpoints (the client's own value, e.g. CUSTOM, is kept). */
  readonly agentMode: AgentMode;
  readonly workspaceRoot: string;
  /** Where the client writes background shells' output (`<folder>/<shell id>.txt`); "" unknown. */
  readonly terminalsFolder: string;
  readonly mcpTools: readonly McpToolRef[];
  /** The web tools this turn offers (server configuration and the client's settings). */
  readonly web: WebOffer;
  /** The model's context window, for the client's context-usage indicator. */
  readonly contextWindow: number;
  /** Next exec / interaction-query id (uint32, per stream). */
  readonly nextID: number;
  /** The tool calls running, in the order they started (each has its own operation id). */
  readonly open: readonly OpenToolCall[];
  /** The model call currently streaming ("" before the first). */
  readonly modelCallID: string;
  readonly streaming: readonly StreamingToolCall[];
  /** The open thinking block of the current model call. */
  readonly thinking: { readonly contentIndex: number; readonly startedAt: number } | null;
  /** Thinking durations of the current model call, by content index. */
  readonly thinkingDurations: readonly {
    readonly contentIndex: number;
    readonly durationMs: number;
  }[];
  readonly usage: TurnUsage;
  /** Tokens in the context after the last model call (input + cache + output). */
  readonly contextTokens: number;
  /** The Cursor user message that started the turn. */
  readonly userMessage: CursorUserMessage;
  /** The steps of this turn so far, in order. */
  readonly steps: readonly ConversationStep[];
  /**
   * The part of this turn the client's checkpoint held when this stream took the turn on (a
   * resume, carried-turn.ts): its user message and first steps, which come before `steps` in
   * this stream's checkpoints; absent for a turn the stream started.
   */
  readonly carried?: CarriedTurn;
  /**
   * The last turn of the client's checkpoint, read when a resume built this state, until the
   * runner says which turn the stream carries (`withCarriedTurn`); absent otherwise.
   */
  readonly lastClientTurn?: LastClientTurn;
  /** The checkpoint the client sent with the run request (earlier turns, fields we keep as is). */
  readonly previous: ConversationStateStructure;
  /**
   * Per turn of `previous`, the bytes the client sent back for it in `pre_fetched_blobs`
   * (referenced-bytes.ts), counted against the checkpoint cap; absent: none.
   */
  readonly previousReferenced?: readonly number[];
  /** The server-kept todo list. */
  readonly todos: readonly TodoItem[];
  /** The client's custom subagents (request context `custom_subagents`); absent: none. */
  readonly customSubagents?: readonly CustomSubagentDefinition[];
  /**
   * What a subagent's first turn starts with (`toSubagentContext`): the environment, workspace,
   * rules and the user's instructions its system prompt refers to; absent: none.
   */
  readonly subagentContext?: readonly ContextSupplement[];
}

/** A subagent the user defined (`CustomSubagent` of the request context), as plain data. */
export interface CustomSubagentDefinition {
  readonly name: string;
  readonly description: string;
  readonly prompt: string;
  /** Tool names it may use; empty: all of the parent's. */
  readonly tools: readonly string[];
  /** "" or `inherit`: the parent's. */
  readonly model: string;
  /** `permission_mode` READONLY. */
  readonly readOnly: boolean;
}

export function addUsage(total: TurnUsage, usage: Usage): TurnUsage {
  return {
    input: total.input + usage.input,
    output: total.output + usage.output,
    cacheRead: total.cacheRead + usage.cacheRead,
    cacheWrite: total.cacheWrite + usage.cacheWrite,
    reasoning: total.reasoning + (usage.reasoning ?? 0),
  };
}

/** Tokens the conversation occupies after a call with `usage`. */
export function toContextTokens(usage: Usage): number {
  return usage.input + usage.cacheRead + usage.cacheWrite + usage.output;
}
