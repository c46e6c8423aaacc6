/**
 * `conversation_checkpoint_update`: the conversation state the client stores and sends back with
 * the next run request. Built from the checkpoint the client sent (so fields this server does
 * not manage, and unknown fields, survive unchanged, its turns in the form it sent them) plus
 * this turn. Here in the inline form: the turn is a serialized ConversationTurnStructure whose
 * user message and steps are serialized bytes too. The agent stream sends the blob-backed form
 * instead (checkpoint-blobs.ts, built from the same turn state: `toCheckpointSource`), and this
 * one when the client does not confirm the blob writes (docs/protocol.md §2.10).
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { toTurnStructureBytes } from "./checkpoint-bytes.ts";
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import { AgentServerMessageSchema } from "./gen/agent/v1/agent_stream_pb.js";
import { TodoItemSchema } from "./gen/agent/v1/common_pb.js";
import {
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationTokenDetailsSchema,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import type { TurnState } from "./turn-state.ts";

/**
 * Largest checkpoint sent. The client keeps each checkpoint as one blob in its renderer, and
 * very large ones stall it (peers cap at 512 KiB); older material is dropped first.
 */
export const MAX_CHECKPOINT_BYTES = 512 * 1024;

const UINT32_MAX = 0xffff_ffff;

export function toCheckpoint(state: TurnState): ConversationStateStructure {
  if (state.carried !== undefined && state.carried.bytes === null) {
    // A carried turn the client has only as blobs that did not come back (carried-turn.ts): its
    // entry stays as the client sent it, and this stream's part follows as a turn of its own.
    return toCheckpointWith({ ...state, previous: withClientEntry(state) }, toTurnBytes(state));
  }
  return toCheckpointWith(state, toTurnBytes(state));
}

/**
 * `previous` with the carried turn's entry put back last (once per stream). Kept by `previous`
 * and checked against the entry: one `previous` may be shared by streams (run-request.ts: the
 * empty checkpoint of a first turn) that carry different turns.
 */
const withEntries = new WeakMap<
  ConversationStateStructure,
  { readonly entry: Uint8Array | undefined; readonly restored: ConversationStateStructure }
>();

function withClientEntry(state: TurnState): ConversationStateStructure {
  const { previous, carried } = state;
  const entry = carried?.entry;
  const cached = withEntries.get(previous);
  if (cached !== undefined && cached.entry === entry) return cached.restored;
  const restored = copyMessage(previous);
  restored.turns = entry === undefined ? previous.turns : [...previous.turns, entry];
  withEntries.set(previous, { entry, restored });
  return restored;
}

/**
 * The checkpoint with `turn` as this turn's entry in `turns` (inline bytes, or the 32-byte id
 * of the turn's blob), fitted to `MAX_CHECKPOINT_BYTES` in that form, counting with each turn the
 * blobs the client sends back for it (`pre_fetched_blobs`: `state.previousReferenced`, and
 * `referenced` for this turn's own blobs).
 */
export function toCheckpointWith(
  state: TurnState,
  turn: Uint8Array,
  referenced = 0,
): ConversationStateStructure {
  const { previous } = state;
  // The fields a checkpoint sets, on a message of their own to measure them.
  const set = create(ConversationStateStructureSchema);
  set.pendingToolCalls = state.open.map(toPendingToolCall);
  // A stale breakdown from an earlier checkpoint would contradict the new totals.
  set.tokenDetails = create(ConversationTokenDetailsSchema, {
    usedTokens: Math.min(state.contextTokens, UINT32_MAX),
    maxTokens: Math.min(state.contextWindow, UINT32_MAX),
  });
  set.mode = state.agentMode;
  set.todos = state.todos.map((todo) => toBinary(TodoItemSchema, todo));
  // A shallow copy: its fields are replaced, never changed in place, so the state's value (and
  // the earlier turns, up to 512 KiB, sent again in every checkpoint) is shared, not copied.
  const checkpoint = copyMessage(previous);
  checkpoint.turns = [...previous.turns, turn];
  checkpoint.pendingToolCalls = set.pendingToolCalls;
  checkpoint.tokenDetails = set.tokenDetails;
  checkpoint.mode = set.mode;
  checkpoint.todos = set.todos;
  const extra = state.previousReferenced ?? [];
  const referencedOf = (index: number): number =>
    index === previous.turns.length ? referenced : (extra[index] ?? 0);
  return fitCheckpoint(checkpoint, keptSize(previous) + encodedSize(set), referencedOf);
}

/** The turn state each checkpoint message was built from (for its blob form). */
const sources = new WeakMap<AgentServerMessage, TurnState>();

/**
 * The checkpoint in the inline form. Its value is built when first read: the agent stream sends
 * the blob form instead (checkpoint-blobs.ts) and reads this one only when it falls back, so a
 * checkpoint is not built twice (issue #19).
 */
export function toCheckpointMessage(state: TurnState): AgentServerMessage {
  const message = create(AgentServerMessageSchema);
  let value: ConversationStateStructure | undefined;
  message.message = {
    case: "conversationCheckpointUpdate",
    get value(): ConversationStateStructure {
      value ??= toCheckpoint(state);
      return value;
    },
  };
  sources.set(message, state);
  return message;
}

/** The turn state `toCheckpointMessage` built `message` from; undefined for any other message. */
export function toCheckpointSource(message: AgentServerMessage): TurnState | undefined {
  return sources.get(message);
}

/**
 * This turn as inline bytes: ConversationTurnStructure{agent_conversation_turn{…}}. A carried
 * turn's user message and earlier steps come from the client's checkpoint (carried-turn.ts).
 */
export function toTurnBytes(state: TurnState): Uint8Array {
  const carried = state.carried?.bytes ?? null;
  if (carried === null) {
    return toTurnStructure(toUserMessageBytes(state), toStepBytes(state), state.requestID);
  }
  return toTurnStructure(
    carried.userMessage,
    [...carried.steps, ...toStepBytes(state)],
    state.requestID,
  );
}

/**
 * `ConversationTurnStructure{agent_conversation_turn{user_message, steps, request_id}}`: the
 * fields are the serialized messages (inline form) or their blob ids (blob form).
 */
export function toTurnStructure(
  userMessage: Uint8Array,
  steps: readonly Uint8Array[],
  requestID: string,
): Uint8Array {
  const direct = toTurnStructureBytes(userMessage, steps, requestID);
  if (direct !== undefined) return direct;
  const turn = create(ConversationTurnStructureSchema, {
    turn: {
      case: "agentConversationTurn",
      value: { userMessage, steps: [...steps], requestId: requestID },
    },
  });
  return toBinary(ConversationTurnStructureSchema, turn);
}

/** The turn's serialized UserMessage (encoded once per turn). */
export function toUserMessageBytes(state: TurnState): Uint8Array {
  return encodedOnce(state.userMessage, () => toBinary(UserMessageSchema, state.userMessage));
}

/** The turn's serialized ConversationSteps (each encoded once). */
export function toStepBytes(state: TurnState): Uint8Array[] {
  return state.steps.map((step) => encodedOnce(step, () => toBinary(ConversationStepSchema, step)));
}

/**
 * The bytes of the turn's user message and of each of its steps, encoded once: every checkpoint
 * of the turn (two per tool call) carries all of them again, and a step (a tool call with its
 * result) is never changed once it is in the turn state (issue #19).
 */
const encoded = new WeakMap<object, Uint8Array>();

function encodedOnce(message: object, encode: () => Uint8Array): Uint8Array {
  let bytes = encoded.get(message);
  if (bytes === undefined) {
    bytes = encode();
    encoded.set(message, bytes);
  }
  return bytes;
}

/** An open tool call in the AI-SDK-style JSON peers send (one assistant message, one call). */
function toPendingToolCall(open: TurnState["open"][number]): string {
  return JSON.stringify({
    id: open.toolCallID,
    role: "assistant",
    content: [
      {
        type: "tool-call",
        toolCallId: open.toolCallID,
        toolName: open.toolName,
        args: open.arguments,
      },
    ],
  });
}

/**
 * Drops what the client can do without, oldest first, until the checkpoint fits: replay JSON,
 * file snapshots, read paths, then earlier turns. The current turn is always kept.
 * `size`: the encoded size of `checkpoint` without its turns; `referenced(i)`: the bytes turn i
 * brings back besides its entry (its blobs in `pre_fetched_blobs`). Sizes are added up rather than
 * encoded for each try: an encoding's length is the sum of its fields' (issue #19: a 500 KiB
 * checkpoint took ≈0.3 ms to encode, twice per tool call, and once more per turn dropped).
 */
function fitCheckpoint(
  checkpoint: ConversationStateStructure,
  size: number,
  referenced: (index: number) => number,
): ConversationStateStructure {
  const cost = (index: number): number =>
    turnSize(checkpoint.turns[index] ?? new Uint8Array(0)) + referenced(index);
  let turns = 0;
  for (let index = 0; index < checkpoint.turns.length; index++) turns += cost(index);
  if (size + turns <= MAX_CHECKPOINT_BYTES) return checkpoint;
  checkpoint.rootPromptMessagesJson = [];
  checkpoint.fileStates = {};
  checkpoint.fileStatesV2 = {};
  checkpoint.readPaths = [];
  const rest = encodedSize(withoutTurns(checkpoint));
  let dropped = 0;
  while (rest + turns > MAX_CHECKPOINT_BYTES && checkpoint.turns.length - dropped > 1) {
    turns -= cost(dropped);
    dropped += 1;
  }
  if (dropped > 0) checkpoint.turns = checkpoint.turns.slice(dropped);
  return checkpoint;
}

/** Encoded size of the client's checkpoint without the fields `toCheckpoint` sets, once per turn. */
const keptSizes = new WeakMap<ConversationStateStructure, number>();

function keptSize(previous: ConversationStateStructure): number {
  let size = keptSizes.get(previous);
  if (size === undefined) {
    const kept = withoutTurns(copyMessage(previous));
    kept.pendingToolCalls = [];
    kept.tokenDetails = undefined;
    kept.mode = undefined;
    kept.todos = [];
    size = encodedSize(kept);
    keptSizes.set(previous, size);
  }
  return size;
}

function copyMessage(message: ConversationStateStructure): ConversationStateStructure {
  return Object.assign(
    Object.create(Object.getPrototypeOf(message)) as ConversationStateStructure,
    message,
  );
}

function withoutTurns(checkpoint: ConversationStateStructure): ConversationStateStructure {
  const copy = copyMessage(checkpoint);
  copy.turns = [];
  return copy;
}

function encodedSize(message: ConversationStateStructure): number {
  return toBinary(ConversationStateStructureSchema, message).length;
}

/** `turns` (field 8, length-delimited): one tag byte, the length as a varint, the bytes. */
function turnSize(turn: Uint8Array): number {
  let varint = 1;
  for (let rest = turn.length; rest >= 0x80; rest = Math.floor(rest / 0x80)) varint += 1;
  return 1 + varint + turn.length;
}
