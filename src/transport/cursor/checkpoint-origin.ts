/**
 * The id of the last turn the client shows (loop/rewind.ts): the `request_id` of the last turn of
 * the run request's checkpoint (`conversation_state.turns`). A rewind is told from it — the IDE
 * sends, with an edited earlier message, the checkpoint it had when that message was first sent
 * (docs/protocol.md "Rewinds"). Our checkpoints keep the client's turns and, when too large, drop
 * the oldest (checkpoint.ts `fitCheckpoint`), so the last turn is reliable; turn counts are not.
 * A last turn in the blob form (a 32-byte id) is read from the request's `pre_fetched_blobs`; one
 * the request did not carry is handed to `onUnresolved`, for the turn blobs the server recorded
 * (transport/turn-blob-origins.ts).
 */
import { fromBinary } from "@bufbuild/protobuf";
import { toBlobID } from "./blobs.ts";
import {
  type ConversationStateStructure,
  ConversationTurnStructureSchema,
} from "./gen/agent/v1/conversation_state_pb.js";
import type { PreFetchedBlob } from "./gen/agent/v1/run_request_pb.js";

/** A blob id (SHA-256) in `turns`: the blob form of a turn. Inline turns are longer. */
const BLOB_ID_BYTES = 32;

/**
 * null: the checkpoint has no turns (or there is none). "": it has turns but the last one's id
 * cannot be read from the request (a blob it did not carry, a turn that is not an agent turn,
 * bytes that do not decode); such a start is never taken for a rewind, unless the caller finds
 * the blob: `onUnresolved` is told the hex id of a blob-form last turn the request did not carry.
 */
export function toLastTurnOrigin(
  state: ConversationStateStructure | undefined,
  blobs: readonly PreFetchedBlob[],
  onUnresolved?: (id: string) => void,
): string | null {
  const last = state?.turns.at(-1);
  if (last === undefined) return null;
  let bytes = last;
  if (last.length === BLOB_ID_BYTES) {
    const prefetched = findPrefetched(blobs, last);
    if (prefetched === null) {
      onUnresolved?.(Buffer.from(last).toString("hex"));
      return "";
    }
    bytes = prefetched;
  }
  try {
    const turn = fromBinary(ConversationTurnStructureSchema, bytes).turn;
    return turn.case === "agentConversationTurn" ? (turn.value.requestId ?? "") : "";
  } catch {
    return "";
  }
}

/**
 * The blob `id` of the request's `pre_fetched_blobs`, when its bytes hash to it (blobs.ts); only
 * that blob is hashed, not all of them (images can be large).
 */
function findPrefetched(blobs: readonly PreFetchedBlob[], id: Uint8Array): Uint8Array | null {
  const hex = Buffer.from(id).toString("hex");
  const blob = blobs.find((candidate) => Buffer.from(candidate.id).toString("hex") === hex);
  return blob !== undefined && toBlobID(blob.value) === hex ? blob.value : null;
}
