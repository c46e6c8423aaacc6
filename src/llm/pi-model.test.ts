import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createModelConfig } from "./config.ts";
import { toPiModel } from "./pi-model.ts";

describe("toPiModel", () => {
  test("Anthropic never uses server-side message threads, even if configured to", () => {
    const model = toPiModel(
      createModelConfig({
        name: "c",
        api: "anthropic",
        model: "claude-sonnet-4-5",
        compat: { supportsMessageThreads: true, supportsLongCacheRetention: false },
      }),
    );
    assert.equal(model.api, "anthropic-messages");
    assert.deepEqual(model.compat, {
      supportsStrictTools: true,
      supportsLongCacheRetention: false,
      supportsMessageThreads: false,
    });
  });

  test("Chat Completions sends prompt_cache_key unless a model's compat says otherwise", () => {
    const base = { name: "g", api: "openai-chat", model: "gpt-4.1" } as const;
    assert.deepEqual(toPiModel(createModelConfig(base)).compat, { promptCacheKeyMode: "enabled" });
    assert.deepEqual(
      toPiModel(createModelConfig({ ...base, compat: { promptCacheKeyMode: "disabled" } })).compat,
      { promptCacheKeyMode: "disabled" },
    );
  });

  test("the catalogue's thinking map follows the model across APIs; limits and prices come from the config", () => {
    const model = toPiModel(
      createModelConfig({ name: "g5", api: "openai-chat", model: "gpt-5-mini", maxOutput: 1000 }),
    );
    assert.equal(model.api, "openai-completions");
    assert.equal(model.thinkingLevelMap?.off, null, "gpt-5-mini cannot turn reasoning off");
    assert.equal(model.maxTokens, 1000);
    assert.equal(model.cost.input, 0.25);
    assert.equal(model.name, "g5");
  });
});
