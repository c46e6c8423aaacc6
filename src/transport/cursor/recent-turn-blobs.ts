/**
 * The bytes of the turn blobs this process wrote most recently (checkpoint-blobs.ts), so that a
 * resume request whose checkpoint ends with one of them can read the turn even when the client
 * does not send that blob back in `pre_fetched_blobs` (carried-turn.ts): whether the IDE does is
 * unverified (docs/protocol.md "Rewinds"). A takeover (the IDE re-attaching to its running turn
 * within the reconnect grace) resumes on the process that wrote the turn's last blob, so a short
 * memory covers it; a restart forgets it, and the client's prefetched blob still works then.
 *
 * A turn blob holds only the turn's request id and its user message and step ids (34 bytes a
 * step), so the bound below is about 0.5 MB for turns of 15 steps.
 */

/** How many turn blobs are remembered (each checkpoint of a turn writes one). */
export const RECENT_TURN_BLOBS = 1024;

/** Hex blob id → the blob's bytes, oldest first (a Map keeps insertion order). */
const recent = new Map<string, Uint8Array>();

export function rememberTurnBlobBytes(key: string, data: Uint8Array): void {
  recent.delete(key);
  recent.set(key, data);
  if (recent.size > RECENT_TURN_BLOBS) {
    const oldest = recent.keys().next().value;
    if (oldest !== undefined) recent.delete(oldest);
  }
}

/** The bytes of a turn blob this process wrote lately, or undefined. */
export function findTurnBlobBytes(key: string): Uint8Array | undefined {
  return recent.get(key);
}
