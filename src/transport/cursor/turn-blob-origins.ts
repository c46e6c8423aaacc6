/**
 * The request id of the turn blobs this process wrote to a client most recently
 * (checkpoint-blobs.ts), for a turn carried on by a takeover in this process (carried-turn.ts:
 * the client's checkpoint may end with an earlier checkpoint of the same turn, not sent back in
 * `pre_fetched_blobs`: the stream taken over then rebuilds it, agent-stream/carry-turn.ts).
 * Process-wide, bounded by count. Rewinds and forks do not read it: they read the turn blobs the
 * server recorded in the store, which survive a restart and are shared by the instances of a
 * team (transport/turn-blob-origins.ts).
 */

/** How many turn blob ids are remembered (each checkpoint of a turn writes one). */
export const TURN_BLOB_ORIGINS = 1024;

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
