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

/**
 * The bytes of one server message (the payload of one Connect envelope): `toBinary`'s, written
 * directly for a plain text or thinking delta (one per streamed chunk; the reflective writer
 * walks every branch of both oneofs, ≈10 µs of a paced chunk's path, issue #19).
 * server-message.test.ts holds both byte-identical.
 */
export function toServerMessageBytes(message: AgentServerMessage): Uint8Array {
  return toDeltaBytes(message) ?? toBinary(AgentServerMessageSchema, message);
}

const utf8 = new TextEncoder();
/** Field tags (number << 3 | wire type), from the schemas. */
const LEN = 2;
const VARINT = 0;
const TAG_INTERACTION_UPDATE = tag(AgentServerMessageSchema.field.interactionUpdate.number, LEN);
const TAG_TEXT_DELTA = tag(InteractionUpdateSchema.field.textDelta.number, LEN);
const TAG_THINKING_DELTA = tag(InteractionUpdateSchema.field.thinkingDelta.number, LEN);
const TAG_TEXT = tag(TextDeltaUpdateSchema.field.text.number, LEN);
const TAG_IS_SERVER_NOTICE = tag(TextDeltaUpdateSchema.field.isServerNotice.number, VARINT);
const TAG_THINKING_TEXT = tag(ThinkingDeltaUpdateSchema.field.text.number, LEN);
const TAG_THINKING_STYLE = tag(ThinkingDeltaUpdateSchema.field.thinkingStyle.number, VARINT);
/** The server message's fields outside its oneof: messages, written only when set. */
const OUTER_FIELDS = AgentServerMessageSchema.fields.filter((field) => field.oneof === undefined);
/**
 * Whether the schemas are still the shapes this encoder writes: the update holds only its oneof,
 * the server message its oneof and message fields (left unset here), the deltas their text and
 * one field after it (`toBinary` writes by number).
 */
const DIRECT =
  OUTER_FIELDS.every((field) => field.fieldKind === "message") &&
  InteractionUpdateSchema.fields.every((field) => field.oneof !== undefined) &&
  TextDeltaUpdateSchema.fields.length === 2 &&
  ThinkingDeltaUpdateSchema.fields.length === 2 &&
  TextDeltaUpdateSchema.field.text.number < TextDeltaUpdateSchema.field.isServerNotice.number &&
  ThinkingDeltaUpdateSchema.field.text.number <
    ThinkingDeltaUpdateSchema.field.thinkingStyle.number;

/** A one-byte tag, or 0 when the field's tag needs more (then nothing is written directly). */
function tag(fieldNumber: number, wireType: number): number {
  const value = (fieldNumber << 3) | wireType;
  return value < 0x80 ? value : 0;
}

/**
 * The bytes of a text or thinking delta whose every level is exactly what `toTextDeltaMessage`
 * or `toThinkingDeltaMessage` builds (no unknown fields, the field values of their types);
 * undefined for anything else (`toServerMessageBytes` then uses `toBinary`).
 */
export function toDeltaBytes(message: AgentServerMessage): Uint8Array | undefined {
  if (!DIRECT || message.$unknown !== undefined || message.message.case !== "interactionUpdate") {
    return undefined;
  }
  for (const field of OUTER_FIELDS) {
    if ((message as Record<string, unknown>)[field.localName] !== undefined) return undefined;
  }
  const update = message.message.value;
  if (update.$unknown !== undefined) return undefined;
  let outerTag: number;
  let textTag: number;
  let text: unknown;
  /** The field after the text: its tag and one-byte value, or none (-1). */
  let flagTag = 0;
  let flag = -1;
  switch (update.message.case) {
    case "textDelta": {
      const delta = update.message.value;
      if (delta.$unknown !== undefined) return undefined;
      outerTag = TAG_TEXT_DELTA;
      textTag = TAG_TEXT;
      text = delta.text;
      if (delta.isServerNotice === true) {
        flagTag = TAG_IS_SERVER_NOTICE;
        flag = 1;
      } else if (delta.isServerNotice !== false) {
        return undefined;
      }
      break;
    }
    case "thinkingDelta": {
      const delta = update.message.value;
      if (delta.$unknown !== undefined) return undefined;
      outerTag = TAG_THINKING_DELTA;
      textTag = TAG_THINKING_TEXT;
      text = delta.text;
      // Explicit presence: written when set as the message's own property, even to 0.
      const style = Object.hasOwn(delta, "thinkingStyle") ? delta.thinkingStyle : undefined;
      if (style !== undefined) {
        if (!Number.isInteger(style) || style < 0 || style >= 0x80) return undefined;
        flagTag = TAG_THINKING_STYLE;
        flag = style;
      }
      break;
    }
    default:
      return undefined;
  }
  if (typeof text !== "string" || outerTag === 0 || textTag === 0 || (flag >= 0 && flagTag === 0)) {
    return undefined;
  }
  // proto3 strings: the empty string is not written.
  const bytes = text === "" ? null : utf8.encode(text);
  const inner =
    (bytes === null ? 0 : 1 + varintSize(bytes.length) + bytes.length) + (flag >= 0 ? 2 : 0);
  const middle = 1 + varintSize(inner) + inner;
  const out = new Uint8Array(1 + varintSize(middle) + middle);
  let at = 0;
  out[at++] = TAG_INTERACTION_UPDATE;
  at = writeVarint(out, at, middle);
  out[at++] = outerTag;
  at = writeVarint(out, at, inner);
  if (bytes !== null) {
    out[at++] = textTag;
    at = writeVarint(out, at, bytes.length);
    out.set(bytes, at);
    at += bytes.length;
  }
  if (flag >= 0) {
    out[at++] = flagTag;
    out[at] = flag;
  }
  return out;
}

function varintSize(value: number): number {
  let size = 1;
  for (let rest = value >>> 7; rest !== 0; rest >>>= 7) size++;
  return size;
}

function writeVarint(out: Uint8Array, at: number, value: number): number {
  let rest = value;
  while (rest >= 0x80) {
    out[at++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  out[at++] = rest;
  return at;
}
