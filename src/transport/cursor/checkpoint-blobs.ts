/**
 * The blob-backed form of a checkpoint (docs/protocol.md §2.9, §2.10): this turn's UserMessage,
 * each of its ConversationSteps and the ConversationTurnStructure are blobs in the client's
 * content-addressed store, each named by the SHA-256 of its bytes (32 raw bytes). The turn blob
 * holds the ids of the user message and step blobs (`request_id` stays a string), and the
 * checkpoint's `turns` entry for this turn is the turn blob's id. The IDE's fork, "duplicate
 * chat" and best-of-N look every turn, user message and step up in its store by these ids.
 * The server writes the blobs with `kv_server_message.set_blob_args` and sends the checkpoint
 * once the client confirmed them (agent-stream/checkpoint-blobs.ts). Earlier turns are the
 * client's, passed on in the form it sent them.
 */

import { createHash } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  toCheckpointWith,
  toStepBytes,
  toTurnStructure,
  toUserMessageBytes,
} from "./checkpoint.ts";
import {
  type AgentServerMessage,
  AgentServerMessageSchema,
} from "./gen/agent/v1/agent_stream_pb.js";
import type { ConversationStateStructure } from "./gen/agent/v1/conversation_state_pb.js";
import { UserMessageSchema } from "./gen/agent/v1/user_message_pb.js";
import { PREFETCHED_BLOB_OVERHEAD } from "./referenced-bytes.ts";
import { rememberTurnBlob } from "./turn-blob-origins.ts";
import type { TurnParts, TurnState } from "./turn-state.ts";

export interface CheckpointBlob {
  /** SHA-256 of `data`, 32 raw bytes: what the checkpoint references. */
  readonly id: Uint8Array;
  /** `id` as lowercase hex (a map key). */
  readonly key: string;
  readonly data: Uint8Array;
}

export interface BlobCheckpoint {
  readonly checkpoint: ConversationStateStructure;
  /**
   * The blobs the checkpoint references that this turn made, each once: the user message, the
   * steps, then the turn. Every one must be in the client's store before
   * the checkpoint is sent.
   */
  readonly blobs: readonly CheckpointBlob[];
  /**
   * The turn blob written, also in `blobs`: the checkpoint's last turn. The client may not send
   * it back with its next run request (checkpoint-origin.ts), so the writer has it recorded
   * (transport/turn-blob-origins.ts). Absent: a carried turn's own entry, written before.
   */
  readonly turn?: CheckpointBlob;
  /**
   * How many steps the checkpoint's turn blob lists (the first of the turn's steps, `toTurnIds`).
   * The stream keeps it for the checkpoints that went out (agent-stream/checkpoint-writer.ts): a
   * takeover rebuilds the client's turn blob from it when the client does not send it back
   * (carried-turn.ts `toSentClientTurn`).
   */
  readonly turnSteps: number;
}

export function toBlobCheckpoint(state: TurnState): BlobCheckpoint {
  const { carried } = state;
  if (carried?.ids != null && state.steps.length === 0) {
    // A carried turn this stream has added nothing to yet (a late stream of a turn that is over,
    // a resume before its first step): the client's own entry, in its store already; nothing to
    // write, so nothing to wait for (docs/protocol.md "Resuming a turn").
    const key = Buffer.from(carried.entry).toString("hex");
    rememberTurnBlob(key, state.requestID);
    // Its turn blob comes back too: the ids and the request id (as encoded here, near enough).
    const turnBlob =
      (carried.ids.steps.length + 1) * (BLOB_ID_BYTES + 2) + state.requestID.length + 4;
    const referenced = sizeOf(carried.bytes) + turnBlob + PREFETCHED_BLOB_OVERHEAD;
    return {
      checkpoint: toCheckpointWith(state, carried.entry, referenced),
      blobs: [],
      turnSteps: carried.ids.steps.length,
    };
  }
  const parts = toTurnParts(state);
  const turn = toBlob(
    toTurnStructure(
      parts.user.id,
      parts.steps.map((step) => step.id),
      state.requestID,
    ),
  );
  // The client may not send this blob back with its next run request (checkpoint-origin.ts,
  // carried-turn.ts).
  rememberTurnBlob(turn.key, state.requestID);
  const blobs = new Map<string, CheckpointBlob>();
  for (const blob of [parts.user, ...parts.steps, turn]) {
    if (isWritten(blob) && !blobs.has(blob.key)) blobs.set(blob.key, blob);
  }
  // What the client sends back for this turn: its blobs, in `pre_fetched_blobs` (those it had
  // already count with the sizes it sent them with, when it did).
  let referenced = parts.known;
  for (const blob of blobs.values()) referenced += blob.data.length + PREFETCHED_BLOB_OVERHEAD;
  return {
    checkpoint: toCheckpointWith(state, turn.id, referenced),
    blobs: [...blobs.values()],
    turn,
    turnSteps: parts.steps.length,
  };
}

/**
 * The ids of the turn's user message and steps in order, as its turn blob lists them (a carried
 * turn's first, carried-turn.ts).
 */
export function toTurnIds(state: TurnState): TurnParts {
  const parts = toTurnParts(state);
  return { userMessage: parts.user.id, steps: parts.steps.map((step) => step.id) };
}

/** The id (hex) of the turn blob of `ids` under `requestID`. */
export function toTurnBlobKey(ids: TurnParts, requestID: string): string {
  return toBlob(toTurnStructure(ids.userMessage, ids.steps, requestID)).key;
}

/**
 * The blob ids (hex) of the turn's steps in order: a carried turn's (carried-turn.ts), then this
 * stream's; null when a carried turn's steps are not known by id (inline parts are hashed).
 */
export function toStepKeys(state: TurnState): string[] {
  const { carried } = state;
  const own = toStepBytes(state).map((bytes) => toCachedBlob(bytes).key);
  if (carried === undefined) return own;
  const ids = carried.ids?.steps.map((id) => Buffer.from(id).toString("hex"));
  const carriedKeys = ids ?? carried.bytes?.steps.map((bytes) => toCachedBlob(bytes).key) ?? [];
  return [...carriedKeys, ...own];
}

/** A part of the turn: a blob this turn writes, or the id of one the client's store has. */
type Part = CheckpointBlob | { readonly id: Uint8Array };

function isWritten(part: Part): part is CheckpointBlob {
  return "data" in part;
}

/**
 * The turn's user message and steps. A carried turn's (carried-turn.ts) come first: the ids of a
 * blob-form turn as they are (the client has those blobs), an inline turn's parts as blobs.
 * `known`: the bytes the client sends back for the parts it had (as far as known).
 */
function toTurnParts(state: TurnState): {
  readonly user: Part;
  readonly steps: readonly Part[];
  readonly known: number;
} {
  const own = toStepBytes(state).map(toCachedBlob);
  const { carried } = state;
  if (carried === undefined) return { user: toUserMessageBlob(state), steps: own, known: 0 };
  if (carried.ids !== null) {
    return {
      user: { id: carried.ids.userMessage },
      steps: [...carried.ids.steps.map((id) => ({ id })), ...own],
      known: sizeOf(carried.bytes),
    };
  }
  const inline = carried.bytes;
  if (inline === null) return { user: toUserMessageBlob(state), steps: own, known: 0 };
  return {
    user: toCachedBlob(inline.userMessage),
    steps: [...inline.steps.map(toCachedBlob), ...own],
    known: 0,
  };
}

/** What the client sends back for a carried turn's parts, when their bytes are known. */
function sizeOf(parts: TurnParts | null): number {
  if (parts === null) return 0;
  let size = 0;
  for (const part of [parts.userMessage, ...parts.steps]) {
    size += part.length + PREFETCHED_BLOB_OVERHEAD;
  }
  return size;
}

const BLOB_ID_BYTES = 32;

/** `conversation_checkpoint_update` with `checkpoint`. */
export function toCheckpointUpdate(checkpoint: ConversationStateStructure): AgentServerMessage {
  return create(AgentServerMessageSchema, {
    message: { case: "conversationCheckpointUpdate", value: checkpoint },
  });
}

/** `kv_server_message{id, set_blob_args{blob_id, blob_data}}`. */
export function toSetBlobMessage(id: number, blob: CheckpointBlob): AgentServerMessage {
  return create(AgentServerMessageSchema, {
    message: {
      case: "kvServerMessage",
      value: {
        id,
        message: { case: "setBlobArgs", value: { blobId: blob.id, blobData: blob.data } },
      },
    },
  });
}

/**
 * A read of blob `key` (hex) back from the client's store (`kv_server_message.get_blob_args`);
 * the client answers with `get_blob_result`, the blob's bytes or an error.
 */
export function toGetBlobMessage(id: number, key: string): AgentServerMessage {
  return create(AgentServerMessageSchema, {
    message: {
      case: "kvServerMessage",
      value: {
        id,
        message: {
          case: "getBlobArgs",
          value: { blobId: Uint8Array.from(Buffer.from(key, "hex")) },
        },
      },
    },
  });
}

export function toBlob(data: Uint8Array): CheckpointBlob {
  const digest = createHash("sha256").update(data).digest();
  return { id: Uint8Array.from(digest), key: digest.toString("hex"), data };
}

/**
 * The blob of a user message's or step's bytes, hashed once: those bytes are encoded once per
 * turn (checkpoint.ts) and referenced by every later checkpoint of the turn.
 */
const hashed = new WeakMap<Uint8Array, CheckpointBlob>();

/**
 * The turn's user message blob. One without a message of its own (a resumed or summarize turn)
 * would encode to nothing, and `blob_data` would be absent on the wire; whether the IDE's store
 * keeps an empty value is unknown, so it carries `message_id` = the request id (the IDE's clone
 * maps only the message ids of its bubbles; our import reads only the text).
 */
const placeholders = new WeakMap<object, { readonly requestID: string; blob: CheckpointBlob }>();

function toUserMessageBlob(state: TurnState): CheckpointBlob {
  const bytes = toUserMessageBytes(state);
  if (bytes.length > 0) return toCachedBlob(bytes);
  const known = placeholders.get(state.userMessage);
  if (known !== undefined && known.requestID === state.requestID) return known.blob;
  const blob = toBlob(
    toBinary(UserMessageSchema, create(UserMessageSchema, { messageId: state.requestID })),
  );
  placeholders.set(state.userMessage, { requestID: state.requestID, blob });
  return blob;
}

function toCachedBlob(data: Uint8Array): CheckpointBlob {
  let blob = hashed.get(data);
  if (blob === undefined) {
    blob = toBlob(data);
    hashed.set(data, blob);
  }
  return blob;
}
