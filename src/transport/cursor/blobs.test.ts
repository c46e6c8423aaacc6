import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { findBlob, toBlobID, toBlobStore } from "./blobs.ts";
import { PreFetchedBlobSchema } from "./gen/agent/v1/run_request_pb.js";

const value = new TextEncoder().encode("blob");
const id = new Uint8Array(createHash("sha256").update(value).digest());

test("blobs are addressed by the SHA-256 of their bytes", () => {
  const store = toBlobStore([create(PreFetchedBlobSchema, { id, value })]);
  assert.equal(toBlobID(value), Buffer.from(id).toString("hex"));
  assert.deepEqual(findBlob(store, id), value);
  assert.equal(findBlob(store, new Uint8Array(32)), null);
  assert.equal(findBlob(store, undefined), null);
  assert.equal(findBlob(store, new Uint8Array()), null);
});

test("a blob whose id does not match its bytes is dropped", () => {
  const store = toBlobStore([create(PreFetchedBlobSchema, { id: new Uint8Array(32), value })]);
  assert.equal(findBlob(store, new Uint8Array(32)), null);
  // Also when a valid blob comes under the same id: the valid one is found, the other is not.
  const both = toBlobStore([
    create(PreFetchedBlobSchema, { id, value: new TextEncoder().encode("forged") }),
    create(PreFetchedBlobSchema, { id, value }),
    create(PreFetchedBlobSchema, { id, value: new TextEncoder().encode("forged too") }),
  ]);
  assert.deepEqual(findBlob(both, id), value);
});

test("only the blobs looked up are hashed, each once", () => {
  const read: string[] = [];
  const blob = (name: string, bytes: Uint8Array) => {
    const made = create(PreFetchedBlobSchema, {
      id: new Uint8Array(createHash("sha256").update(bytes).digest()),
    });
    return Object.defineProperty(made, "value", {
      get: () => {
        read.push(name);
        return bytes;
      },
    });
  };
  const store = toBlobStore([blob("a", value), blob("b", new TextEncoder().encode("other"))]);
  assert.deepEqual(read, []);
  assert.deepEqual(findBlob(store, id), value);
  const reads = read.length;
  assert.deepEqual(findBlob(store, id), value);
  assert.equal(findBlob(store, new Uint8Array(32)), null);
  assert.equal(read.length, reads, "a blob found is not hashed again");
  assert.deepEqual(new Set(read), new Set(["a"]), "the blob not looked up is never read");
});
