/** Small constructors for the AgentServerMessages every codec sends. */
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  type AgentServerMessage,
  AgentServerMessageSchema,
} from "./gen/agent/v1/agent_stream_pb.js";
import {
  HeartbeatUpdateSchema,
  InteractionUpdateSchema,
} from "./gen/agent/v1/interaction_update_pb.js";

/** One branch of `InteractionUpdate.message`, as a message or as an init object. */
export type UpdateInit = MessageInitShape<typeof InteractionUpdateSchema>["message"];

/** An interaction update, wrapped. */
export function toUpdateMessage(update: UpdateInit): AgentServerMessage {
  return create(AgentServerMessageSchema, {
    message: {
      case: "interactionUpdate",
      value: create(InteractionUpdateSchema, { message: update }),
    },
  });
}

/**
 * A one-line note from the server to the user (`text_delta` with `is_server_notice`): shown in
 * the chat, never part of the model's history.
 */
export function toServerNotice(text: string): AgentServerMessage {
  return toUpdateMessage({ case: "textDelta", value: { text, isServerNotice: true } });
}

/** `interaction_update.heartbeat`, sent while nothing else is (the transport decides when). */
export function toHeartbeatMessage(): AgentServerMessage {
  return toUpdateMessage({ case: "heartbeat", value: create(HeartbeatUpdateSchema) });
}

/** The bytes of one server message (the payload of one Connect envelope). */
export function toServerMessageBytes(message: AgentServerMessage): Uint8Array {
  return toBinary(AgentServerMessageSchema, message);
}
