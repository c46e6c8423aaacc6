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
  assert.equal(store.size, 0);
});
