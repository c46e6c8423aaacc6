import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { toCanonicalJSON } from "./canonical-json.ts";
import {
  appendHashes,
  chainHash,
  EMPTY_CHAIN_HASH,
  EMPTY_HISTORY_HASHES,
  hashHistory,
  hashMessage,
  toMessageBytes,
} from "./history-hash.ts";
import { assistantMessage, text, toolCall, toolResult, userMessage } from "./testing.ts";

const sha256 = (...parts: Buffer[]) => createHash("sha256").update(Buffer.concat(parts)).digest();

describe("toCanonicalJSON()", () => {
  test("should write JSON without whitespace, keeping key order as built", () => {
    assert.equal(toCanonicalJSON({ b: 1, a: [true, null, "x"] }), '{"b":1,"a":[true,null,"x"]}');
    assert.equal(toCanonicalJSON({ a: 1, b: 2 }), '{"a":1,"b":2}');
  });

  test("should round-trip through JSON.parse to the same bytes", () => {
    const message = assistantMessage([
      toolCall("c1", "edit", { path: "x", old: "é\n\u2028", new: 1.5 }),
    ]);
    const bytes = toCanonicalJSON(message);
    assert.equal(toCanonicalJSON(JSON.parse(bytes)), bytes);
    assert.equal(bytes, JSON.stringify(message));
  });

  test("should omit undefined members", () => {
    assert.equal(toCanonicalJSON({ a: undefined, b: 1 }), '{"b":1}');
  });

  test("should reject what JSON cannot represent faithfully", () => {
    for (const bad of [
      { n: Number.NaN },
      { n: Number.POSITIVE_INFINITY },
      [undefined],
      { d: new Date(0) },
      { m: new Map() },
      { f: () => 1 },
      { b: 1n },
    ]) {
      assert.throws(() => toCanonicalJSON(bad), TypeError);
    }
  });
});

describe("history hashes", () => {
  const history = [
    userMessage("read a.ts"),
    assistantMessage([text("Reading."), toolCall("c1", "read", { path: "a.ts" })]),
    toolResult(toolCall("c1", "read"), "1\tconst a = 1;"),
  ];

  test("hashMessage should be sha256 of the canonical bytes", () => {
    const [first] = history;
    assert.ok(first);
    assert.deepEqual(Buffer.from(toMessageBytes(first)).toString("utf8"), toCanonicalJSON(first));
    assert.equal(
      hashMessage(first),
      createHash("sha256").update(toCanonicalJSON(first), "utf8").digest("hex"),
    );
  });

  test("chain[n] should be sha256(chain[n-1] || hash(message n)) from 32 zero bytes", () => {
    let expected = Buffer.alloc(32);
    for (const message of history) {
      expected = sha256(expected, Buffer.from(hashMessage(message), "hex"));
    }
    assert.equal(hashHistory(history).chainHash, expected.toString("hex"));
    assert.equal(EMPTY_CHAIN_HASH, Buffer.alloc(32).toString("hex"));
  });

  test("appending incrementally should equal hashing from scratch", () => {
    let hashes = EMPTY_HISTORY_HASHES;
    for (const message of history) hashes = appendHashes(hashes, [message]);
    assert.deepEqual(hashes, hashHistory(history));
    assert.equal(hashes.lastMessageHash, hashMessage(history[2] as (typeof history)[2]));
  });

  test("a changed message anywhere should change the chain", () => {
    const base = hashHistory(history).chainHash;
    const edited = [userMessage("read b.ts"), ...history.slice(1)];
    assert.notEqual(hashHistory(edited).chainHash, base);
    const reordered = [history[0], history[2], history[1]] as typeof history;
    assert.notEqual(hashHistory(reordered).chainHash, base);
  });

  test("chainHash should depend on both inputs", () => {
    const h = hashMessage(userMessage("x"));
    assert.notEqual(chainHash(EMPTY_CHAIN_HASH, h), chainHash(h, EMPTY_CHAIN_HASH));
  });
});
