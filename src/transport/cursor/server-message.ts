/** Small constructors for the AgentServerMessages every codec sends. */
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  type AgentServerMessage,
  AgentServerMessageSchema,
} from "./gen/agent/v1/agent_stream_pb.js";
import {
  HeartbeatUpdateSchema,
  InteractionUpdateSchema,
  type TextDeltaUpdate,
  TextDeltaUpdateSchema,
  type ThinkingDeltaUpdate,
  ThinkingDeltaUpdateSchema,
  type ThinkingStyle,
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

const SERVER_MESSAGE = AgentServerMessageSchema.typeName;
const INTERACTION_UPDATE = InteractionUpdateSchema.typeName;
const TEXT_DELTA = TextDeltaUpdateSchema.typeName;
const THINKING_DELTA = ThinkingDeltaUpdateSchema.typeName;

/**
 * `interaction_update.text_delta`, built as the object `toUpdateMessage` (three `create` calls)
 * builds, field for field: one is sent per streamed delta, and this costs a fraction of the
 * reflective construction (issue #19). server-message.test.ts holds both equal (`create`'s
 * result and its bytes).
 */
export function toTextDeltaMessage(text: string, isServerNotice = false): AgentServerMessage {
  const delta: TextDeltaUpdate = { $typeName: TEXT_DELTA, text, isServerNotice };
  return {
    $typeName: SERVER_MESSAGE,
    message: {
      case: "interactionUpdate",
      value: { $typeName: INTERACTION_UPDATE, message: { case: "textDelta", value: delta } },
    },
  };
}

/** `interaction_update.thinking_delta`, built as `toTextDeltaMessage` is (the same test). */
export function toThinkingDeltaMessage(
  text: string,
  thinkingStyle?: ThinkingStyle,
): AgentServerMessage {
  const delta: ThinkingDeltaUpdate =
    thinkingStyle === undefined
      ? { $typeName: THINKING_DELTA, text }
      : { $typeName: THINKING_DELTA, text, thinkingStyle };
  return {
    $typeName: SERVER_MESSAGE,
    message: {
      case: "interactionUpdate",
      value: { $typeName: INTERACTION_UPDATE, message: { case: "thinkingDelta", value: delta } },
    },
  };
}

/**
 * A one-line note from the server to the user (`text_delta` with `is_server_notice`): shown in
 * the chat, never part of the model's history.
 */
export function toServerNotice(text: string): AgentServerMessage {
  return toTextDeltaMessage(text, true);
}

/** `interaction_update.heartbeat`, sent while nothing else is (the transport decides when). */
export function toHeartbeatMessage(): AgentServerMessage {
  return toUpdateMessage({ case: "heartbeat", value: create(HeartbeatUpdateSchema) });
}

/** The bytes of one server message (the payload of one Connect envelope). */
export function toServerMessageBytes(message: AgentServerMessage): Uint8Array {
  return toBinary(AgentServerMessageSchema, message);
}
