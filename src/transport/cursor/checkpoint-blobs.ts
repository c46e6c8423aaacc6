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
import type { TurnState } from "./turn-state.ts";

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
   * The turn blob, also in `blobs`: the checkpoint's last turn. The client may not send it back
   * with its next run request (checkpoint-origin.ts), so the writer has it recorded.
   */
  readonly turn: CheckpointBlob;
}

export function toBlobCheckpoint(state: TurnState): BlobCheckpoint {
  // Always a user message blob (a resumed or summarize turn has no message of its own): the
  // IDE's clone throws on a turn without a user message id ("Missing user message blob id").
  const user = toUserMessageBlob(state);
  const steps = toStepBytes(state).map(toCachedBlob);
  const turn = toBlob(
    toTurnStructure(
      user.id,
      steps.map((step) => step.id),
      state.requestID,
    ),
  );
  const blobs = new Map<string, CheckpointBlob>();
  for (const blob of [user, ...steps, turn]) {
    if (!blobs.has(blob.key)) blobs.set(blob.key, blob);
  }
  // What the client sends back for this turn: its blobs, in `pre_fetched_blobs`.
  let referenced = 0;
  for (const blob of blobs.values()) referenced += blob.data.length + PREFETCHED_BLOB_OVERHEAD;
  return {
    checkpoint: toCheckpointWith(state, turn.id, referenced),
    blobs: [...blobs.values()],
    turn,
  };
}

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
