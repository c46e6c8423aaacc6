/**
 * The contract of a tool in the catalogue (docs/design.md §5): a definition for the model plus a
 * mapping to the client protocol. A tool is a small state machine driven by the tool session:
 * `start` → (`request` a client operation | `done`), then `resume` with each client reply →
 * (`request` the next operation | `wait` for more replies | `done`). Handlers are pure; the
 * session owns ids, UI updates and the turn state.
 */
import type { ImageContent, JsonObject, Tool } from "../../../llm/types.ts";
import type { TodoItem } from "../gen/agent/v1/common_pb.js";
import type { ExecClientMessage, ExecServerMessage } from "../gen/agent/v1/exec_pb.js";
import type {
  InteractionQuery,
  InteractionResponse,
} from "../gen/agent/v1/interaction_query_pb.js";
import type { InteractionUpdate } from "../gen/agent/v1/interaction_update_pb.js";
import type { ToolCall as UiToolCall } from "../gen/agent/v1/tool_call_pb.js";
import type { Mode } from "../mode.ts";
import type { ServerWork, ServerWorkResult } from "./server-work.ts";

/** What a handler may read: never a clock or a random source (time arrives as `at`). */
export interface ToolEnv {
  /** Relative paths from the model resolve against this (the client's first workspace root). */
  readonly workspaceRoot: string;
  /** The model's id for this call, sent back to the client as `tool_call_id`. */
  readonly toolCallID: string;
  /** Arrival time of the input being handled, epoch ms. */
  readonly at: number;
  /** The todo list the server keeps for the conversation. */
  readonly todos: readonly TodoItem[];
  /** The mode the turn runs in now. */
  readonly mode: Mode;
  /** Where the client writes background shells' output; "" when it did not say. */
  readonly terminalsFolder: string;
  /** Whether web tools ask the user before they run (the client's approval prompt). */
  readonly askWebApproval: boolean;
}

/**
 * A request for the client (an exec, or a question shown to the user), or work the server does
 * itself (`server`: nothing goes to the client; the transport runs it).
 */
export type ClientRequest =
  | {
      readonly type: "exec";
      readonly exec: Exclude<ExecServerMessage["message"], { case: undefined }>;
    }
  | {
      readonly type: "query";
      readonly query: Exclude<InteractionQuery["query"], { case: undefined }>;
    }
  | { readonly type: "server"; readonly work: ServerWork };

/** A reply to the current request: the client's, or the result of the server's own work. */
export type ClientReply =
  | { readonly type: "exec"; readonly result: ExecClientMessage["message"] }
  | { readonly type: "query"; readonly result: InteractionResponse["result"] }
  | { readonly type: "server"; readonly result: ServerWorkResult };

/** The UI form of a tool call (a `ToolCall.tool` oneof value). */
export type UiTool = UiToolCall["tool"];

/** An interaction update the session sends as is (e.g. shell output deltas). */
export type UiUpdate = InteractionUpdate["message"];

export interface ToolOutput {
  /** The result text the model sees: compact, faithful, cuts stated. */
  readonly text: string;
  readonly isError: boolean;
  readonly images: readonly ImageContent[];
  /** The completed UI form (args and result). */
  readonly ui: UiTool;
  /** Updates to send before the completed tool call. */
  readonly updates: readonly UiUpdate[];
  /** The server-side todo list after this call, when the call changed it. */
  readonly todos: readonly TodoItem[] | null;
  /** The mode the rest of the turn runs in, when the call changed it (switch_mode). */
  readonly mode?: Mode;
}

export type ToolProgress<D> =
  /** Send `request` and wait for its reply; `stage` and `data` come back to `resume`. */
  | {
      readonly type: "request";
      readonly request: ClientRequest;
      readonly stage: string;
      readonly data: D;
    }
  /** Keep waiting for more replies to the current request (streamed results). */
  | { readonly type: "wait"; readonly data: D; readonly updates: readonly UiUpdate[] }
  | { readonly type: "done"; readonly output: ToolOutput };

export type ParseResult<A> =
  | { readonly ok: true; readonly args: A }
  | { readonly ok: false; readonly error: string };

export interface ToolHandler<A, D> {
  /** The name the model calls. */
  readonly name: string;
  readonly definition: Tool;
  /** The modes that offer this tool. */
  readonly modes: readonly Mode[];
  /** Model arguments → typed, plain-data arguments; errors become isError results. */
  parse(args: JsonObject, env: ToolEnv): ParseResult<A>;
  /** The UI form shown while arguments stream in (no args known yet). */
  preview(): UiTool;
  /** The UI form when the call starts (args only). */
  started(args: A, env: ToolEnv): UiTool;
  start(args: A, env: ToolEnv): ToolProgress<D>;
  resume(args: A, stage: string, data: D, reply: ClientReply, env: ToolEnv): ToolProgress<D>;
  /** The output when the client could not run the call (`exec_client_control_message.throw`). */
  failed(args: A, error: string, env: ToolEnv): ToolOutput;
}
