/** What a model call reserves against a user's budget (call-estimate.ts, docs/team.md). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { toReservation } from "./call-estimate.ts";
import type { LLMCall } from "./types.ts";

const model = {
  maxOutput: 16_000,
  maxModeMaxOutput: 128_000,
  prices: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 },
};

function call(options?: LLMCall["options"]): LLMCall {
  return {
    callID: "call-1",
    model: "m",
    conversationID: "c",
    // 400 characters of system prompt, no tools (`[]` is 2 characters): 101 tokens of input.
    request: { systemPrompt: "x".repeat(400), messages: [], tools: [] },
    ...(options === undefined ? {} : { options }),
  };
}

test("a call reserves its estimated input plus the output limit it is sent with", () => {
  const base = toReservation(call(), model);
  assert.equal(base.tokens, 101 + 16_000);
  assert.equal(base.cost, (101 * 3 + 16_000 * 15) / 1_000_000);
  assert.deepEqual(toReservation(call({ maxMode: false }), model), base);
});

test("a max-mode call reserves the max-mode output limit (review M3)", () => {
  const max = toReservation(call({ maxMode: true }), model);
  assert.equal(max.tokens, 101 + 128_000);
  assert.equal(max.cost, (101 * 3 + 128_000 * 15) / 1_000_000);
  // A model without max mode has both limits equal: max mode changes nothing.
  const plain = { ...model, maxModeMaxOutput: model.maxOutput };
  assert.deepEqual(toReservation(call({ maxMode: true }), plain), toReservation(call(), plain));
});

test("an unknown model reserves the input only", () => {
  assert.deepEqual(toReservation(call({ maxMode: true }), undefined), { tokens: 101, cost: 0 });
});
