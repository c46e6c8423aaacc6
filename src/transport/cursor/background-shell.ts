/**
 * The user's "move to background" on a running command (`background_shell_action` 13): the
 * server asks the client to background that command's shell (`force_background_shell_args`,
 * exec 30). The shell's own stream then ends with `backgrounded`, which completes the tool call
 * as usual (tools/shell.ts); the client's acknowledgement of exec 30 needs no handling.
 */
import { create } from "@bufbuild/protobuf";
import {
  type AgentServerMessage,
  AgentServerMessageSchema,
} from "./gen/agent/v1/agent_stream_pb.js";
import { toExecID } from "./tool-session.ts";
import type { TurnState } from "./turn-state.ts";

export type ForceBackground =
  | { readonly type: "sent"; readonly state: TurnState; readonly messages: AgentServerMessage[] }
  | { readonly type: "ignored"; readonly why: string };

export function toForceBackground(state: TurnState, toolCallID: string): ForceBackground {
  const open = state.open.find((call) => call.toolCallID === toolCallID);
  if (open === undefined) {
    return { type: "ignored", why: `no running tool call ${toolCallID}` };
  }
  if (open.toolName !== "shell" || open.awaiting.type !== "exec") {
    return { type: "ignored", why: `tool call ${toolCallID} is not a running command` };
  }
  const id = state.nextID;
  const message = create(AgentServerMessageSchema, {
    message: {
      case: "execServerMessage",
      value: {
        id,
        execId: toExecID(`${open.operationID}:background`, id),
        message: { case: "forceBackgroundShellArgs", value: { toolCallId: toolCallID } },
      },
    },
  });
  return { type: "sent", state: { ...state, nextID: id + 1 }, messages: [message] };
}
