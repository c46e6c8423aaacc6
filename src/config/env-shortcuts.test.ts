import assert from "node:assert/strict";
import { test } from "node:test";
import { ENV_SHORTCUTS, toShortcutModels } from "./env-shortcuts.ts";

test("every shortcut model is in pi-ai's catalogue, so its limits and prices are known", () => {
  const env = Object.fromEntries(ENV_SHORTCUTS.map((shortcut) => [shortcut.variable, "k"]));
  const models = toShortcutModels(env);
  assert.equal(models.length, ENV_SHORTCUTS.flatMap((shortcut) => shortcut.models).length);
  for (const { config } of models) {
    assert.equal(config.catalogued, true, `${config.name} is not in the catalogue`);
    assert.ok(config.contextWindow > 0 && config.prices.input > 0, config.name);
  }
  const names = models.map(({ config }) => config.name);
  assert.equal(new Set(names).size, names.length, "names are unique");
});

test("a key variable enables its provider's models, reading the key from that variable", () => {
  const models = toShortcutModels({ ANTHROPIC_API_KEY: "sk-ant", OPENROUTER_API_KEY: "sk-or" });
  assert.deepEqual(
    models.map(({ config, variable }) => [config.name, config.provider, config.baseUrl, variable]),
    [
      ["claude-sonnet-5-5", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"],
      ["claude-opus-5-5", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"],
      ["claude-haiku-5-5", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"],
      [
        "anthropic/claude-sonnet-5.5",
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
      ],
      ["openai/gpt-6.2-sol", "openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"],
      [
        "google/gemini-3.1-pro-preview",
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
      ],
      [
        "deepseek/deepseek-v4-pro",
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
      ],
    ],
  );
  for (const { config, variable } of models) {
    assert.deepEqual(config.apiKey, { type: "env", name: variable });
  }
});

test("an unset or blank variable enables nothing", () => {
  assert.deepEqual(toShortcutModels({}), []);
  assert.deepEqual(toShortcutModels({ OPENAI_API_KEY: "  ", GEMINI_API_KEY: "" }), []);
  assert.deepEqual(
    toShortcutModels({ GEMINI_API_KEY: "g" }).map(({ config }) => [config.name, config.api]),
    [
      ["gemini-3.1-pro-preview", "gemini"],
      ["gemini-3.5-flash", "gemini"],
    ],
  );
});
