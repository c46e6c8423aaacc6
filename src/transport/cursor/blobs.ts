/**
 * Blobs the client sent with a run request (`pre_fetched_blobs`), addressed by SHA-256. A blob
 * whose id is not the SHA-256 of its bytes is ignored, as if it had not been sent.
 *
 * A blob is hashed when it is first looked up, not when the store is made: the store is made at
 * every turn start, and the blobs (documents, images, PR texts) can be large while only those a
 * message or context item refers to are read (issue #19).
 */
import { createHash } from "node:crypto";
import type { PreFetchedBlob } from "./gen/agent/v1/run_request_pb.js";

/** The request's blobs by hex id (a `Map` of verified blobs is one too). */
export interface BlobStore {
  get(id: string): Uint8Array | undefined;
}

export function toBlobStore(blobs: readonly PreFetchedBlob[]): BlobStore {
  let claimed: Map<string, PreFetchedBlob[]> | null = null;
  const found = new Map<string, Uint8Array | undefined>();
  return {
    get(id) {
      if (found.has(id)) return found.get(id);
      if (claimed === null) {
        claimed = new Map();
        for (const blob of blobs) {
          const key = Buffer.from(blob.id).toString("hex");
          claimed.set(key, [...(claimed.get(key) ?? []), blob]);
        }
      }
      // The last of the blobs sent under this id whose bytes hash to it (as a map filled in
      // order would keep).
      let value: Uint8Array | undefined;
      for (const blob of claimed.get(id) ?? []) {
        if (toBlobID(blob.value) === id) value = blob.value;
      }
      found.set(id, value);
      return value;
    },
  };
}

/** Hex SHA-256 of `bytes`: the blob id the client uses, as a map key. */
export function toBlobID(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export function findBlob(store: BlobStore, id: Uint8Array | undefined): Uint8Array | null {
  if (id === undefined || id.length === 0) return null;
  return store.get(Buffer.from(id).toString("hex")) ?? null;
}
