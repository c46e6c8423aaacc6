import assert from "node:assert/strict";
import { test } from "node:test";
import { findTurnBlobOrigin, rememberTurnBlob, TURN_BLOB_ORIGINS } from "./turn-blob-origins.ts";

test("the written turn blobs are remembered in a bounded LRU", () => {
  rememberTurnBlob("first", "r-first");
  rememberTurnBlob("kept", "r-kept");
  for (let index = 0; index < TURN_BLOB_ORIGINS - 2; index++) {
    rememberTurnBlob(`filler-${index}`, "r");
    // Reading "kept" now and then makes it recent.
    if (index % 100 === 0) assert.equal(findTurnBlobOrigin("kept"), "r-kept");
  }
  rememberTurnBlob("last", "r-last");
  assert.equal(findTurnBlobOrigin("first"), undefined, "the least recent one went");
  assert.equal(findTurnBlobOrigin("kept"), "r-kept");
  assert.equal(findTurnBlobOrigin("last"), "r-last");
});
