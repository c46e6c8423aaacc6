import assert from "node:assert/strict";
import { test } from "node:test";
import { zeroUsage } from "../../loop/testing.ts";
import { addUsage, toContextTokens, ZERO_USAGE } from "./turn-state.ts";

test("usage adds up per field; reasoning counts only when reported", () => {
  const first = {
    ...zeroUsage(),
    input: 100,
    output: 10,
    cacheRead: 50,
    cacheWrite: 5,
    reasoning: 3,
  };
  const second = { ...zeroUsage(), input: 20, output: 7 };
  assert.deepEqual(addUsage(addUsage(ZERO_USAGE, first), second), {
    input: 120,
    output: 17,
    cacheRead: 50,
    cacheWrite: 5,
    reasoning: 3,
  });
});

test("context tokens are everything the call read and wrote", () => {
  assert.equal(
    toContextTokens({ ...zeroUsage(), input: 100, output: 10, cacheRead: 50, cacheWrite: 5 }),
    165,
  );
});
