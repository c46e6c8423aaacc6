/**
 * The wire bytes of a checkpoint, written with its turns copied in directly. A checkpoint is
 * sent when a tool call starts, when it ends and when the turn ends, and carries every earlier
 * turn (up to 512 KiB, checkpoint.ts): `toBinary` copies those bytes twice (once per nesting
 * level, ≈0.3 ms for 400 KiB); here they are copied once, into the message's own buffer, and
 * only the checkpoint's other fields go through `toBinary` (issue #19). The same bytes:
 * `toBinary` writes fields by number, then unknown fields, and an encoding is the concatenation
 * of its fields' encodings (checkpoint-bytes.test.ts holds both identical).
 */
import { create, ScalarType, toBinary } from "@bufbuild/protobuf";
import {
  AgentConversationTurnStructureSchema,
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";

const SCHEMA = ConversationStateStructureSchema;
const TURNS = SCHEMA.field.turns;
/** `turns` is field 8, length-delimited: a one-byte tag. */
const TAG_TURN = (TURNS.number << 3) | 2;
/** Fields written before the turns, and after them (then the unknown fields). */
const BEFORE = SCHEMA.fields.filter((field) => field.number < TURNS.number);
const AFTER = SCHEMA.fields.filter((field) => field.number > TURNS.number);
/**
 * Whether the schema is still the shape written here: no oneof, turns a list of bytes (never
 * packed, one tag per element). Otherwise every checkpoint goes through `toBinary`.
 */
const DIRECT =
  SCHEMA.oneofs.length === 0 &&
  TURNS.fieldKind === "list" &&
  TURNS.listKind === "scalar" &&
  TURNS.scalar === ScalarType.BYTES &&
  TAG_TURN < 0x80;

/**
 * The bytes of a message whose only field is the checkpoint, under the one-byte tag `outerTag`
 * (`AgentServerMessage.conversation_checkpoint_update`): `toBinary`'s; undefined when there is
 * nothing to gain (no turns) or the schema changed shape.
 */
export function toCheckpointFieldBytes(
  checkpoint: ConversationStateStructure,
  outerTag: number,
): Uint8Array | undefined {
  const { turns } = checkpoint;
  if (!DIRECT || outerTag <= 0 || outerTag >= 0x80 || turns.length === 0) return undefined;
  const before = toBinary(SCHEMA, only(checkpoint, BEFORE, false));
  const after = toBinary(SCHEMA, only(checkpoint, AFTER, true));
  let body = before.length + after.length;
  for (const turn of turns) body += 1 + varintSize(turn.length) + turn.length;
  const out = new Uint8Array(1 + varintSize(body) + body);
  out[0] = outerTag;
  let at = writeVarint(out, 1, body);
  out.set(before, at);
  at += before.length;
  for (const turn of turns) {
    out[at++] = TAG_TURN;
    at = writeVarint(out, at, turn.length);
    out.set(turn, at);
    at += turn.length;
  }
  out.set(after, at);
  return out;
}

/** Field presence (`FeatureSet.FieldPresence`): explicit (optional), implicit (proto3 scalars). */
const EXPLICIT = 1;
const IMPLICIT = 2;
const AGENT_TURN = ConversationTurnStructureSchema.field.agentConversationTurn;
const TURN = AgentConversationTurnStructureSchema.field;
/** Whether the turn's schemas are still the shape `toTurnStructureBytes` writes. */
const DIRECT_TURN =
  AGENT_TURN.number === 1 &&
  AGENT_TURN.fieldKind === "message" &&
  ConversationTurnStructureSchema.fields.every((field) => field.oneof !== undefined) &&
  TURN.userMessage.number === 1 &&
  TURN.userMessage.fieldKind === "scalar" &&
  TURN.userMessage.presence === IMPLICIT &&
  TURN.steps.number === 2 &&
  TURN.steps.fieldKind === "list" &&
  TURN.steps.listKind === "scalar" &&
  TURN.requestId.number === 3 &&
  TURN.requestId.fieldKind === "scalar" &&
  TURN.requestId.presence === EXPLICIT;

const utf8 = new TextEncoder();

/**
 * `toBinary` of `ConversationTurnStructure{agent_conversation_turn{user_message, steps,
 * request_id}}`, written into one buffer: `toBinary` copies the steps once per nesting level,
 * and this turn (all its tool calls with their results) goes out again in every checkpoint.
 * Undefined when the schema changed shape. checkpoint-bytes.test.ts holds both identical.
 */
export function toTurnStructureBytes(
  userMessage: Uint8Array,
  steps: readonly Uint8Array[],
  requestID: string,
): Uint8Array | undefined {
  if (!DIRECT_TURN) return undefined;
  const id = utf8.encode(requestID);
  // Implicit presence: an empty user message is not written; the request id always is.
  let inner = userMessage.length > 0 ? fieldSize(userMessage.length) : 0;
  for (const step of steps) inner += fieldSize(step.length);
  inner += fieldSize(id.length);
  const out = new Uint8Array(fieldSize(inner));
  out[0] = (AGENT_TURN.number << 3) | 2;
  let at = writeVarint(out, 1, inner);
  if (userMessage.length > 0)
    at = writeField(out, at, (TURN.userMessage.number << 3) | 2, userMessage);
  for (const step of steps) at = writeField(out, at, (TURN.steps.number << 3) | 2, step);
  writeField(out, at, (TURN.requestId.number << 3) | 2, id);
  return out;
}

/** A length-delimited field with a one-byte tag: tag, length, bytes. */
function fieldSize(length: number): number {
  return 1 + varintSize(length) + length;
}

function writeField(out: Uint8Array, at: number, tag: number, value: Uint8Array): number {
  out[at] = tag;
  const start = writeVarint(out, at + 1, value.length);
  out.set(value, start);
  return start + value.length;
}

/** A checkpoint holding only `fields` of `checkpoint` (and its unknown fields if `unknown`). */
function only(
  checkpoint: ConversationStateStructure,
  fields: typeof BEFORE,
  unknown: boolean,
): ConversationStateStructure {
  const part = create(SCHEMA) as unknown as Record<string, unknown>;
  const source = checkpoint as unknown as Record<string, unknown>;
  for (const field of fields) {
    // Explicit presence: written when the message's own property is set (even to a zero).
    if (Object.hasOwn(source, field.localName)) part[field.localName] = source[field.localName];
  }
  if (unknown && checkpoint.$unknown !== undefined) part.$unknown = checkpoint.$unknown;
  return part as unknown as ConversationStateStructure;
}

function varintSize(value: number): number {
  let size = 1;
  for (let rest = value >>> 7; rest !== 0; rest >>>= 7) size++;
  return size;
}

function writeVarint(out: Uint8Array, at: number, value: number): number {
  let rest = value;
  let next = at;
  while (rest >= 0x80) {
    out[next++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  out[next++] = rest;
  return next;
}
