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

/** `interaction_update.heartbeat`, sent while nothing else is (the transport decides when). */
export function toHeartbeatMessage(): AgentServerMessage {
  return toUpdateMessage({ case: "heartbeat", value: create(HeartbeatUpdateSchema) });
}

/** The bytes of one server message (the payload of one Connect envelope). */
export function toServerMessageBytes(message: AgentServerMessage): Uint8Array {
  return toBinary(AgentServerMessageSchema, message);
}
