/**
 * A subagent's progress shown inside the parent's task card (docs/protocol.md §2.12): its
 * interaction updates travel wrapped as `tool_call_delta { call_id = the task call,
 * task_tool_call_delta { interaction_update } }`. Public servers that bridge Cursor's IDE report
 * that the IDE renders a subagent's text only this way (bare updates land in the parent's own
 * stream), so everything the subagent shows is wrapped: its text and thinking, and the UI updates
 * of its tool calls. Requests for the client (execs, questions), exec control and checkpoints stay
 * as they are: the client runs a subagent's tools like any other.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import type { ResponseEvent } from "../../llm/types.ts";
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import {
  type InteractionUpdate,
  InteractionUpdateSchema,
} from "./gen/agent/v1/interaction_update_pb.js";
import { toUpdateMessage } from "./server-message.ts";

/** `messages` as the client sees them when they belong to the subagent of task call `callID`. */
export function toTaskProgress(
  callID: string,
  messages: readonly AgentServerMessage[],
): AgentServerMessage[] {
  return messages.map((message) =>
    message.message.case === "interactionUpdate" &&
    message.message.value.message.case !== "heartbeat"
      ? wrap(callID, message.message.value)
      : message,
  );
}

/** What a subagent's streamed model output shows inside its task card: its text and thinking. */
export function toTaskProgressEvents(
  callID: string,
  events: readonly ResponseEvent[],
): AgentServerMessage[] {
  const messages: AgentServerMessage[] = [];
  for (const event of events) {
    if (event.type === "text_delta" && event.delta !== "") {
      messages.push(
        wrap(
          callID,
          create(InteractionUpdateSchema, {
            message: { case: "textDelta", value: { text: event.delta } },
          }),
        ),
      );
    } else if (event.type === "thinking_delta" && event.delta !== "") {
      messages.push(
        wrap(
          callID,
          create(InteractionUpdateSchema, {
            message: { case: "thinkingDelta", value: { text: event.delta } },
          }),
        ),
      );
    }
  }
  return messages;
}

function wrap(callID: string, update: InteractionUpdate): AgentServerMessage {
  return toUpdateMessage({
    case: "toolCallDelta",
    value: {
      callId: callID,
      toolCallDelta: {
        delta: {
          case: "taskToolCallDelta",
          value: { interactionUpdate: toBinary(InteractionUpdateSchema, update) },
        },
      },
    },
  });
}
