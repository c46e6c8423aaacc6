import assert from "node:assert/strict";
import { test } from "node:test";
import { createMemoryStore } from "../store/index.ts";
import { createConversationCache } from "./conversation-cache.ts";
import type { TurnOutput } from "./types.ts";

const nullOutput: TurnOutput = {
  publish() {},
  runTool: () => Promise.reject(new Error("no client")),
  end() {},
};

test("an unknown conversation loads as new, and the same entry is returned while held", async () => {
  const cache = createConversationCache(createMemoryStore());
  const entry = await cache.load("c1");
  assert.equal(entry.version, 0);
  assert.equal(entry.state.committed.status, "ready");
  assert.equal(await cache.load("c1"), entry);
  assert.equal(cache.get("c1"), entry);
  cache.drop("c1");
  assert.equal(cache.get("c1"), undefined);
  assert.notEqual(await cache.load("c1"), entry);
});

test("idle conversations beyond the limit are let go, least recently used first; busy ones stay", async () => {
  const cache = createConversationCache(createMemoryStore(), 2);
  const busy = await cache.load("busy");
  busy.tools.set("op-1", { output: nullOutput, settled: Promise.resolve() });
  await cache.load("a");
  await cache.load("b");
  await cache.load("a"); // a is now more recent than b
  await cache.load("c");
  assert.deepEqual(
    [...cache.values()].map((entry) => entry.conversationID),
    ["busy", "a", "c"],
  );
});
