/**
 * Turn blobs (types.ts `TurnBlob`): which turn each blob id a client protocol wrote names, so a
 * client's checkpoint that ends with one can be read after a restart or on another instance
 * (docs/protocol.md "Rewinds"). One row per blob id, written outside commits in batches; bounded
 * per request id (`TURN_BLOBS_PER_REQUEST`).
 */
import { StoreError } from "./errors.ts";
import type { Tables } from "./tables.ts";
import type { TurnBlob } from "./types.ts";

/**
 * How many turn blobs are kept per request id: its newest (a row is recorded for each blob-form
 * checkpoint released to the client, ≈2 per tool call; one replaced while it waited is not,
 * agent-stream/checkpoint-writer.ts). The client's checkpoint ends with the last of them that
 * reached it, never with an early one once later ones went out, so a turn's rows stay bounded
 * however many steps it has: ≈1 KiB per turn at most.
 */
export const TURN_BLOBS_PER_REQUEST = 8;

const BLOB_ID = /^[0-9a-f]{64}$/;

/** Writes `blobs` (checked first: nothing is written when one is not valid), then trims. */
export async function recordTurnBlobRows(
  tables: Tables,
  blobs: readonly TurnBlob[],
  location: string,
): Promise<void> {
  for (const blob of blobs) checkTurnBlob(blob, location);
  const requests = new Set<string>();
  for (const { blobID, conversationID, requestID } of blobs) {
    await tables.insertTurnBlob({ blobID, conversationID, requestID });
    requests.add(requestID);
  }
  for (const requestID of requests) await tables.trimTurnBlobs(requestID, TURN_BLOBS_PER_REQUEST);
}

export function checkBlobID(blobID: unknown, location: string): string {
  if (typeof blobID !== "string" || !BLOB_ID.test(blobID)) {
    throw new StoreError(
      "invalid_argument",
      location,
      `Cannot use a turn blob id in ${location}: it must be 64 lowercase hex digits. ` +
        "Nothing was written.",
    );
  }
  return blobID;
}

function checkTurnBlob(blob: TurnBlob, location: string): void {
  checkBlobID(blob?.blobID, location);
  for (const [name, value] of [
    ["conversationID", blob.conversationID],
    ["requestID", blob.requestID],
  ] as const) {
    if (typeof value !== "string" || value === "") {
      throw new StoreError(
        "invalid_argument",
        location,
        `Cannot record a turn blob in ${location}: the ${name} must be a non-empty string. ` +
          "Nothing was written.",
      );
    }
  }
}
