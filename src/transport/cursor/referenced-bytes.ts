/**
 * What each earlier turn of a checkpoint costs the client to send back (docs/protocol.md §2.10):
 * a turn in the blob form is a 32-byte id in `turns`, but the client sends the blobs it
 * references back in `pre_fetched_blobs` (the turn blob, and its user message and step blobs), so
 * those bytes count against the checkpoint cap too (checkpoint.ts `fitCheckpoint`). Sizes are the
 * ones the run request carried; a blob it did not carry counts nothing (nothing came back).
 */
import { fromBinary } from "@bufbuild/protobuf";
import type { ConversationStateStructure } from "./gen/agent/v1/conversation_state_pb.js";
import { ConversationTurnStructureSchema } from "./gen/agent/v1/conversation_state_pb.js";
import type { PreFetchedBlob } from "./gen/agent/v1/run_request_pb.js";

/** A prefetched blob's framing besides its bytes: its 32-byte id and the field tags/lengths. */
export const PREFETCHED_BLOB_OVERHEAD = 40;

/**
 * Below this many prefetched bytes in all, the earlier turns' shares are not worked out (each
 * counts nothing): that decodes every turn blob at the turn's start, ≈0.5 ms for 50 turns of 11
 * blobs (issue #19), and with this little coming back the cap's purpose — bounding what the
 * client sends back — holds anyway (at most half the cap more than the checkpoint's own).
 */
export const REFERENCED_COUNTED_FROM = 256 * 1024;

const BLOB_ID_BYTES = 32;

/**
 * Per turn of `state` (same order), the bytes of `blobs` it references beyond its own entry in
 * `turns`; absent when no turn references any (no blob-form turn, or nothing prefetched).
 */
export function toReferencedBytes(
  state: ConversationStateStructure | undefined,
  blobs: readonly PreFetchedBlob[],
): number[] | undefined {
  if (state === undefined || blobs.length === 0) return undefined;
  let total = 0;
  for (const blob of blobs) total += blob.value.length + PREFETCHED_BLOB_OVERHEAD;
  if (total <= REFERENCED_COUNTED_FROM) return undefined;
  const sizes = new Map<string, PreFetchedBlob>();
  for (const blob of blobs) sizes.set(Buffer.from(blob.id).toString("hex"), blob);
  let any = false;
  const referenced = state.turns.map((turn) => {
    if (turn.length !== BLOB_ID_BYTES) return 0;
    const blob = sizes.get(Buffer.from(turn).toString("hex"));
    if (blob === undefined) return 0;
    any = true;
    let total = blob.value.length + PREFETCHED_BLOB_OVERHEAD;
    for (const id of referencedIDs(blob.value)) {
      const child = sizes.get(Buffer.from(id).toString("hex"));
      if (child !== undefined) total += child.value.length + PREFETCHED_BLOB_OVERHEAD;
    }
    return total;
  });
  return any ? referenced : undefined;
}

/** The user message and step ids of a turn blob (nothing if it is not a blob-form agent turn). */
function referencedIDs(bytes: Uint8Array): Uint8Array[] {
  try {
    const turn = fromBinary(ConversationTurnStructureSchema, bytes).turn;
    if (turn.case !== "agentConversationTurn") return [];
    const { userMessage, steps } = turn.value;
    return [userMessage, ...steps].filter((id) => id.length === BLOB_ID_BYTES);
  } catch {
    return [];
  }
}
