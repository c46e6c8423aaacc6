import assert from "node:assert/strict";
import { test } from "node:test";
import { toCallModel } from "./call-model.ts";
import { createModelConfig } from "./config.ts";
import { applyModelOptions, type ModelOptions } from "./model-options.ts";
import { toPiModel } from "./pi-model.ts";

const input = {
  name: "m",
  api: "openai-chat",
  model: "gpt-x",
  baseUrl: "http://127.0.0.1:1",
  apiKey: "k",
  reasoning: true,
  contextWindow: 200_000,
  maxOutput: 8_000,
  maxMode: { contextWindow: 1_000_000, maxOutput: 32_000 },
} as const;
const configured = createModelConfig(input);

const OPTIONS: readonly (ModelOptions | undefined)[] = [
  undefined,
  {},
  { thinking: false },
  { thinking: true },
  { thinking: true, effort: "low" },
  { thinking: true, effort: "high" },
  { maxMode: true },
  { thinking: true, effort: "high", maxMode: true },
];

test("each call gets what applyModelOptions and toPiModel make for its options", () => {
  for (const options of OPTIONS) {
    const { config, model } = toCallModel(configured, options);
    const expected = applyModelOptions(configured, options);
    assert.deepEqual(config, expected, JSON.stringify(options));
    assert.deepEqual(model, toPiModel(expected), JSON.stringify(options));
  }
});

test("calls with the same model and options share one value; other options get their own", () => {
  const made = OPTIONS.map((options) => toCallModel(configured, options));
  for (const [index, options] of OPTIONS.entries()) {
    const again = toCallModel(configured, options === undefined ? undefined : { ...options });
    assert.equal(again, made[index], JSON.stringify(options));
    assert.equal(again.model, made[index]?.model);
  }
  assert.equal(new Set(made).size, OPTIONS.length);
  const other = createModelConfig({ ...input, name: "other" });
  assert.notEqual(toCallModel(other, undefined).model, made[0]?.model);
});
