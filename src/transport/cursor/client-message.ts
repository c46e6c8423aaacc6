/**
 * Classifies an `AgentClientMessage` into what the runner must do with it. Stateless and total:
 * every message, including ones carrying branches this schema does not model, maps to exactly
 * one `ClientEvent`, and none of them touches conversation history by itself.
 */
import type { AgentClientMessage } from "./gen/agent/v1/agent_stream_pb.js";
import type { ConversationAction } from "./gen/agent/v1/conversation_action_pb.js";
import type { ExecClientMessage } from "./gen/agent/v1/exec_pb.js";
import type { InteractionResponse } from "./gen/agent/v1/interaction_query_pb.js";
import type { KvClientMessage } from "./gen/agent/v1/kv_pb.js";
import type { AgentRunRequest } from "./gen/agent/v1/run_request_pb.js";

/** The action of a run request that starts a turn. */
export type RunAction = "user_message" | "start_plan" | "execute_plan";

export type ClientEvent =
  /** Start a turn (see run-request.ts). */
  | { readonly type: "run"; readonly action: RunAction; readonly request: AgentRunRequest }
  /** Continue an interrupted turn; `request` is set when it came inside a run request. */
  | { readonly type: "resume"; readonly request: AgentRunRequest | null }
  /** Warm up a conversation; no turn starts. */
  | { readonly type: "prewarm"; readonly conversationID: string | null }
  | { readonly type: "cancel"; readonly reason: string }
  /** The user ran a shell command themselves; `request` is set when it came as a run request. */
  | {
      readonly type: "shell_command";
      readonly command: string;
      readonly execID: string;
      readonly request: AgentRunRequest | null;
    }
  /** The user stopped one running subagent (`cancel_subagent_action`); the turn goes on. */
  | { readonly type: "cancel_subagent"; readonly subagentID: string }
  /** The user moved the running command of tool call `toolCallID` to the background. */
  | { readonly type: "background_shell"; readonly toolCallID: string }
  /** Summarize (compact) the conversation: `/summarize`. */
  | { readonly type: "summarize"; readonly request: AgentRunRequest | null }
  /** A result (or one streamed shell event) for exec `id` / `execID`. */
  | {
      readonly type: "exec_result";
      readonly id: number;
      readonly execID: string;
      readonly result: ExecClientMessage["message"];
    }
  /** Closes the transport of an exec; not terminal (it may precede the result). */
  | { readonly type: "exec_stream_close"; readonly id: number }
  /** The client could not run exec `id`; terminal for that exec. */
  | { readonly type: "exec_throw"; readonly id: number; readonly error: string }
  /** Keep-alive of a long-running exec. */
  | { readonly type: "exec_heartbeat"; readonly id: number }
  | {
      readonly type: "interaction_response";
      readonly id: number;
      readonly result: InteractionResponse["result"];
    }
  | { readonly type: "kv_result"; readonly id: number; readonly result: KvClientMessage["message"] }
  | { readonly type: "heartbeat" }
  /**
   * A conversation action the client sent that this server does not serve (yet), or does not
   * know (a branch this schema does not model): it must not leave the client waiting, so the
   * stream ends it with an error the client shows. `action` names it for the user and logs.
   */
  | { readonly type: "unserved_action"; readonly action: string }
  /** A message this server does not act on; `what` names it for logs. */
  | { readonly type: "unsupported"; readonly what: string };

export function fromClientMessage(message: AgentClientMessage): ClientEvent {
  const branch = message.message;
  switch (branch.case) {
    case "runRequest":
      return fromRunRequestAction(branch.value);
    case "prewarmRequest":
      return { type: "prewarm", conversationID: branch.value.conversationId ?? null };
    case "conversationAction":
      return fromStandaloneAction(branch.value);
    case "execClientMessage":
      return {
        type: "exec_result",
        id: branch.value.id,
        execID: branch.value.execId,
        result: branch.value.message,
      };
    case "execClientControlMessage": {
      const control = branch.value.message;
      switch (control.case) {
        case "streamClose":
          return { type: "exec_stream_close", id: control.value.id };
        case "throw":
          return { type: "exec_throw", id: control.value.id, error: control.value.error };
        case "heartbeat":
          return { type: "exec_heartbeat", id: control.value.id };
        case undefined:
          return { type: "unsupported", what: "exec_client_control_message without a branch" };
      }
      break;
    }
    case "interactionResponse":
      return {
        type: "interaction_response",
        id: branch.value.id,
        result: branch.value.result,
      };
    case "kvClientMessage":
      return { type: "kv_result", id: branch.value.id, result: branch.value.message };
    case "clientHeartbeat":
      return { type: "heartbeat" };
    case undefined:
      return { type: "unsupported", what: "agent_client_message without a known branch" };
  }
  return { type: "unsupported", what: "agent_client_message" };
}

/**
 * The actions this server serves. Every other action the client can send, known or not, is an
 * `unserved_action` (see `toUnserved`), so adding one is one case here and nothing else.
 */
function fromRunRequestAction(request: AgentRunRequest): ClientEvent {
  const action = request.action?.action ?? { case: undefined };
  switch (action.case) {
    case "userMessageAction":
      return { type: "run", action: "user_message", request };
    case "startPlanAction":
      return { type: "run", action: "start_plan", request };
    case "executePlanAction":
      return { type: "run", action: "execute_plan", request };
    case "resumeAction":
      return { type: "resume", request };
    case "summarizeAction":
      return { type: "summarize", request };
    case "shellCommandAction":
      return {
        type: "shell_command",
        command: action.value.shellCommand?.command ?? "",
        execID: action.value.execId,
        request,
      };
    case undefined:
      // No action at all warms the conversation up, like a prewarm request; an action we cannot
      // even decode is not "no action".
      return request.action === undefined || !hasUnknownBranch(request.action)
        ? { type: "prewarm", conversationID: request.conversationId ?? null }
        : toUnserved(request.action);
    default:
      return toUnserved(request.action ?? null);
  }
}

function fromStandaloneAction(action: ConversationAction): ClientEvent {
  const branch = action.action;
  switch (branch.case) {
    case "cancelAction":
      return { type: "cancel", reason: branch.value.reason };
    case "resumeAction":
      return { type: "resume", request: null };
    case "summarizeAction":
      return { type: "summarize", request: null };
    case "backgroundShellAction":
      return { type: "background_shell", toolCallID: branch.value.toolCallId };
    case "cancelSubagentAction":
      return { type: "cancel_subagent", subagentID: branch.value.subagentId };
    case "shellCommandAction":
      return {
        type: "shell_command",
        command: branch.value.shellCommand?.command ?? "",
        execID: branch.value.execId,
        request: null,
      };
    default:
      return toUnserved(action);
  }
}

/**
 * Field numbers of `ConversationAction` branches this schema does not model
 * (conversation_action.proto): background task completion, subscription notification, goal
 * continuation, context injection.
 */
const UNMODELLED_BRANCHES: Readonly<Record<number, string>> = {
  12: "background task completion",
  16: "subscription notification",
  18: "goal continuation",
  19: "context injection",
};

/** Names of the modelled actions this server does not serve, as the user knows them. */
const UNSERVED_NAMES: Readonly<Record<string, string>> = {
  summarizeAction: "summarize (/summarize)",
  shellCommandAction: "shell command",
  asyncAskQuestionCompletionAction: "asynchronous question answer",
  cancelSubagentAction: "cancel subagent",
  backgroundShellAction: "background shell",
  backgroundSubagentAction: "background subagent",
  userMessageAction: "user message outside a run request",
  startPlanAction: "start plan outside a run request",
  executePlanAction: "execute plan outside a run request",
};

function toUnserved(action: ConversationAction | null): ClientEvent {
  const branch = action?.action.case;
  if (branch !== undefined) {
    return { type: "unserved_action", action: UNSERVED_NAMES[branch] ?? branch };
  }
  const field = action?.$unknown?.find((unknown) => UNMODELLED_BRANCHES[unknown.no] !== undefined);
  const name =
    field === undefined
      ? "an empty conversation action"
      : `${UNMODELLED_BRANCHES[field.no]} (field ${field.no})`;
  return { type: "unserved_action", action: name };
}

function hasUnknownBranch(action: ConversationAction): boolean {
  return (action.$unknown ?? []).some((field) => UNMODELLED_BRANCHES[field.no] !== undefined);
}
