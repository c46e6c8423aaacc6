/**
 * The request id of every turn blob this process wrote to a client (checkpoint-blobs.ts), so the
 * last turn of a run request's checkpoint can be read when the client does not send that blob
 * back in `pre_fetched_blobs` (checkpoint-origin.ts): whether the IDE does is unverified
 * (docs/protocol.md "Rewinds"), and a rewind or a fork's lineage needs that request id.
 *
 * Process-wide and bounded: the most recently written or read `TURN_BLOB_ORIGINS` ids (an LRU;
 * about 200 bytes each). A restart forgets them; the client's prefetched blob still works then.
 */

/** How many turn blob ids are remembered (each checkpoint of a turn writes one). */
export const TURN_BLOB_ORIGINS = 20_000;

/** Hex blob id → request id, oldest first (a Map keeps insertion order). */
const origins = new Map<string, string>();

export function rememberTurnBlob(key: string, requestID: string): void {
  origins.delete(key);
  origins.set(key, requestID);
  if (origins.size > TURN_BLOB_ORIGINS) {
    const oldest = origins.keys().next().value;
    if (oldest !== undefined) origins.delete(oldest);
  }
}

/** The request id of a turn blob this process wrote, or undefined (unknown, or forgotten). */
export function findTurnBlobOrigin(key: string): string | undefined {
  const requestID = origins.get(key);
  if (requestID !== undefined) {
    origins.delete(key);
    origins.set(key, requestID);
  }
  return requestID;
}
