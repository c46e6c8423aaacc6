/** Small constructors for the AgentServerMessages every codec sends. */
import { create, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { toCheckpointFieldBytes } from "./checkpoint-bytes.ts";
import { deepFreeze } from "./deep-freeze.ts";
import {
  type AgentServerMessage,
  AgentServerMessageSchema,
} from "./gen/agent/v1/agent_stream_pb.js";
import {
  HeartbeatUpdateSchema,
  InteractionUpdateSchema,
  PartialToolCallUpdateSchema,
  type TextDeltaUpdate,
  TextDeltaUpdateSchema,
  type ThinkingDeltaUpdate,
  ThinkingDeltaUpdateSchema,
  type ThinkingStyle,
} from "./gen/agent/v1/interaction_update_pb.js";
import { type ToolCall, ToolCallSchema } from "./gen/agent/v1/tool_call_pb.js";

/** Field presence (`FeatureSet.FieldPresence`): implicit (proto3 scalars), explicit (optional). */
const EXPLICIT = 1;
const IMPLICIT = 2;

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

/**
 * `interaction_update.heartbeat`, sent while nothing else is (the transport decides when): one
 * shared, frozen message whose bytes are made once (`toServerMessageBytes`). Every idle stream
 * sends one per heartbeat interval, and after a pause of the process the heartbeats of all the
 * streams that fell due meanwhile go out in one run of timers: built and encoded each time, they
 * took 35 ms of one 72 ms run with 2,000 streams, holding back every chunk behind them (issue
 * #19).
 */
const HEARTBEAT = deepFreeze(
  toUpdateMessage({ case: "heartbeat", value: create(HeartbeatUpdateSchema) }),
);
const HEARTBEAT_BYTES = toBinary(AgentServerMessageSchema, HEARTBEAT);

export function toHeartbeatMessage(): AgentServerMessage {
  return HEARTBEAT;
}

/**
 * The bytes of one server message (the payload of one Connect envelope): `toBinary`'s, a copy of
 * the heartbeat's made once, written directly for a plain text, thinking or partial tool call
 * delta (one per streamed chunk; the reflective writer walks every branch of both oneofs, ≈10 µs
 * of a paced chunk's path, and the tool call's UI form each time, issue #19), and for a
 * checkpoint update (its earlier turns copied in once, checkpoint-bytes.ts).
 * server-message.test.ts and checkpoint-bytes.test.ts hold them byte-identical.
 */
export function toServerMessageBytes(message: AgentServerMessage): Uint8Array {
  if (message === HEARTBEAT) return HEARTBEAT_BYTES.slice();
  return (
    toDeltaBytes(message) ??
    toCheckpointUpdateBytes(message) ??
    toBinary(AgentServerMessageSchema, message)
  );
}

/** A `conversation_checkpoint_update` with its turns copied in once (checkpoint-bytes.ts). */
function toCheckpointUpdateBytes(message: AgentServerMessage): Uint8Array | undefined {
  if (message.$unknown !== undefined || message.message.case !== "conversationCheckpointUpdate") {
    return undefined;
  }
  if (hasOuterFields(message)) return undefined;
  return toCheckpointFieldBytes(message.message.value, TAG_CHECKPOINT);
}

const utf8 = new TextEncoder();
/** Field tags (number << 3 | wire type), from the schemas. */
const LEN = 2;
const VARINT = 0;
const TAG_INTERACTION_UPDATE = tag(AgentServerMessageSchema.field.interactionUpdate.number, LEN);
const TAG_CHECKPOINT = tag(AgentServerMessageSchema.field.conversationCheckpointUpdate.number, LEN);
const TAG_TEXT_DELTA = tag(InteractionUpdateSchema.field.textDelta.number, LEN);
const TAG_THINKING_DELTA = tag(InteractionUpdateSchema.field.thinkingDelta.number, LEN);
const TAG_PARTIAL_TOOL_CALL = tag(InteractionUpdateSchema.field.partialToolCall.number, LEN);
const TEXT = TextDeltaUpdateSchema.field;
const THINKING = ThinkingDeltaUpdateSchema.field;
const PARTIAL = PartialToolCallUpdateSchema.field;
/** The server message's fields outside its oneof: messages, written only when set. */
const OUTER_FIELDS = AgentServerMessageSchema.fields.filter((field) => field.oneof === undefined);

/** Whether any field of the server message outside its oneof is set (e.g. `ttft_breakdown`). */
export function hasOuterFields(message: AgentServerMessage): boolean {
  for (const field of OUTER_FIELDS) {
    if ((message as Record<string, unknown>)[field.localName] !== undefined) return true;
  }
  return false;
}
/**
 * Whether the schemas are still the shapes this encoder writes (`toBinary` writes fields by
 * number): the update holds only its oneof; the server message its oneof and message fields
 * (left unset here); each delta exactly the fields below, in this order.
 */
const DIRECT =
  OUTER_FIELDS.every((field) => field.fieldKind === "message") &&
  InteractionUpdateSchema.fields.every((field) => field.oneof !== undefined) &&
  TextDeltaUpdateSchema.fields.length === 2 &&
  TEXT.text.number < TEXT.isServerNotice.number &&
  ThinkingDeltaUpdateSchema.fields.length === 2 &&
  THINKING.text.number < THINKING.thinkingStyle.number &&
  PartialToolCallUpdateSchema.fields.length === 4 &&
  PARTIAL.callId.number < PARTIAL.toolCall.number &&
  PARTIAL.toolCall.number < PARTIAL.argsTextDelta.number &&
  PARTIAL.argsTextDelta.number < PARTIAL.modelCallId.number &&
  PARTIAL.toolCall.fieldKind === "message" &&
  [TEXT.text, TEXT.isServerNotice, THINKING.text, PARTIAL.callId, PARTIAL.argsTextDelta]
    .concat([PARTIAL.modelCallId])
    .every((field) => field.presence === IMPLICIT) &&
  THINKING.thinkingStyle.presence === EXPLICIT;

/** A one-byte tag, or 0 when the field's tag needs more (then nothing is written directly). */
function tag(fieldNumber: number, wireType: number): number {
  const value = (fieldNumber << 3) | wireType;
  return value < 0x80 ? value : 0;
}

/**
 * A tool call's UI form, serialised once: a streaming call sends the same `ToolCall` with each
 * of its `partial_tool_call`s (response-events.ts); messages are never changed once sent.
 */
const toolCallBytes = new WeakMap<ToolCall, Uint8Array>();

/**
 * The fields of the delta being written, in field order (one write at a time, so shared): a tag
 * and its value — an ASCII string (written as is), UTF-8 bytes, or a one-byte varint.
 */
const partTags: number[] = [];
const partValues: (string | Uint8Array | number)[] = [];

/** Adds a proto3 string field (nothing when empty); false when `value` is not a string. */
function addText(fieldNumber: number, value: unknown): boolean {
  if (typeof value !== "string") return false;
  if (value === "") return true;
  partTags.push(tag(fieldNumber, LEN));
  partValues.push(value.length <= SHORT && isAscii(value) ? value : utf8.encode(value));
  return true;
}

/** Up to this many UTF-16 units, an ASCII string is copied in JS; longer ones, natively. */
const SHORT = 32;

function isAscii(value: string): boolean {
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * The bytes of a text, thinking or partial tool call delta whose every level is what
 * `toTextDeltaMessage`, `toThinkingDeltaMessage` or response-events.ts builds (no unknown
 * fields, the field values of their types); undefined for anything else
 * (`toServerMessageBytes` then uses `toBinary`).
 */
export function toDeltaBytes(message: AgentServerMessage): Uint8Array | undefined {
  partTags.length = 0;
  partValues.length = 0;
  const outerTag = addDeltaParts(message);
  if (outerTag === 0 || partTags.includes(0)) {
    partValues.length = 0;
    return undefined;
  }
  let inner = 0;
  for (let i = 0; i < partTags.length; i++) {
    const value = partValues[i] as string | Uint8Array | number;
    inner += typeof value === "number" ? 2 : 1 + varintSize(value.length) + value.length;
  }
  const middle = 1 + varintSize(inner) + inner;
  const out = new Uint8Array(1 + varintSize(middle) + middle);
  let at = 0;
  out[at++] = TAG_INTERACTION_UPDATE;
  at = writeVarint(out, at, middle);
  out[at++] = outerTag;
  at = writeVarint(out, at, inner);
  for (let i = 0; i < partTags.length; i++) {
    out[at++] = partTags[i] as number;
    const value = partValues[i] as string | Uint8Array | number;
    if (typeof value === "number") {
      out[at++] = value;
    } else if (typeof value === "string") {
      at = writeVarint(out, at, value.length);
      for (let j = 0; j < value.length; j++) out[at++] = value.charCodeAt(j);
    } else {
      at = writeVarint(out, at, value.length);
      out.set(value, at);
      at += value.length;
    }
  }
  partValues.length = 0;
  return out;
}

/** Adds the delta's fields (`partTags`, `partValues`); its update's tag, or 0: not a delta. */
function addDeltaParts(message: AgentServerMessage): number {
  if (!DIRECT || message.$unknown !== undefined || message.message.case !== "interactionUpdate") {
    return 0;
  }
  if (TAG_INTERACTION_UPDATE === 0) return 0;
  if (hasOuterFields(message)) return 0;
  const update = message.message.value;
  if (update.$unknown !== undefined) return 0;
  switch (update.message.case) {
    case "textDelta": {
      const delta = update.message.value;
      if (delta.$unknown !== undefined || !addText(TEXT.text.number, delta.text)) return 0;
      if (delta.isServerNotice === true) {
        partTags.push(tag(TEXT.isServerNotice.number, VARINT));
        partValues.push(1);
      } else if (delta.isServerNotice !== false) {
        return 0;
      }
      return TAG_TEXT_DELTA;
    }
    case "thinkingDelta": {
      const delta = update.message.value;
      if (delta.$unknown !== undefined || !addText(THINKING.text.number, delta.text)) return 0;
      // Explicit presence: written when set as the message's own property, even to 0.
      const style = Object.hasOwn(delta, "thinkingStyle") ? delta.thinkingStyle : undefined;
      if (style !== undefined) {
        if (!Number.isInteger(style) || style < 0 || style >= 0x80) return 0;
        partTags.push(tag(THINKING.thinkingStyle.number, VARINT));
        partValues.push(style);
      }
      return TAG_THINKING_DELTA;
    }
    case "partialToolCall": {
      const delta = update.message.value;
      if (delta.$unknown !== undefined || !addText(PARTIAL.callId.number, delta.callId)) return 0;
      const toolCall = Object.hasOwn(delta, "toolCall") ? delta.toolCall : undefined;
      if (toolCall !== undefined) {
        let bytes = toolCallBytes.get(toolCall);
        if (bytes === undefined) {
          bytes = toBinary(ToolCallSchema, toolCall);
          toolCallBytes.set(toolCall, bytes);
        }
        partTags.push(tag(PARTIAL.toolCall.number, LEN));
        partValues.push(bytes);
      }
      if (!addText(PARTIAL.argsTextDelta.number, delta.argsTextDelta)) return 0;
      if (!addText(PARTIAL.modelCallId.number, delta.modelCallId)) return 0;
      return TAG_PARTIAL_TOOL_CALL;
    }
    default:
      return 0;
  }
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
