/**
 * Blobs the client sent with a run request (`pre_fetched_blobs`), addressed by SHA-256. A blob
 * whose id is not the SHA-256 of its bytes is ignored, as if it had not been sent.
 */
import { createHash } from "node:crypto";
import type { PreFetchedBlob } from "./gen/agent/v1/run_request_pb.js";

export type BlobStore = ReadonlyMap<string, Uint8Array>;

export function toBlobStore(blobs: readonly PreFetchedBlob[]): BlobStore {
  const store = new Map<string, Uint8Array>();
  for (const blob of blobs) {
    const id = toBlobID(blob.value);
    if (Buffer.from(blob.id).toString("hex") === id) store.set(id, blob.value);
  }
  return store;
}

/** Hex SHA-256 of `bytes`: the blob id the client uses, as a map key. */
export function toBlobID(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export function findBlob(store: BlobStore, id: Uint8Array | undefined): Uint8Array | null {
  if (id === undefined || id.length === 0) return null;
  return store.get(Buffer.from(id).toString("hex")) ?? null;
}
