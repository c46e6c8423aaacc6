import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { inspect } from "node:util";
import { ConfigError, createModelConfig, createModelConfigs } from "./config.ts";

const KEY = "sk-live-0123456789abcdef";

function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail("expected a ConfigError");
}

describe("createModelConfig", () => {
  test("a known model takes its limits, prices and reasoning from pi-ai's catalogue", () => {
    const config = createModelConfig({
      name: "Claude",
      api: "anthropic",
      model: "claude-sonnet-4-5",
    });
    assert.equal(config.provider, "anthropic");
    assert.equal(config.baseUrl, "https://api.anthropic.com");
    assert.deepEqual(config.apiKey, { type: "env", name: "ANTHROPIC_API_KEY" });
    assert.equal(config.catalogued, true);
    assert.equal(config.reasoning, true);
    assert.equal(config.thinking, "medium", "reasoning models think by default");
    assert.equal(config.contextWindow, 200_000);
    assert.equal(config.maxOutput, 64_000);
    assert.deepEqual(
      { ...config.prices },
      { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
    );
  });

  test("configured values win over the catalogue; explicit prices drop its tiers", () => {
    const config = createModelConfig({
      name: "Sonnet via OpenRouter",
      api: "openai-compatible",
      provider: "openrouter",
      model: "anthropic/claude-sonnet-4.5",
      contextWindow: 100_000,
      maxOutput: 8_000,
      thinking: "low",
      prices: { input: 4 },
    });
    assert.equal(
      config.baseUrl,
      "https://openrouter.ai/api/v1",
      "the preset, not the catalogue's other API",
    );
    assert.deepEqual(config.apiKey, { type: "env", name: "OPENROUTER_API_KEY" });
    assert.equal(config.contextWindow, 100_000);
    assert.equal(config.maxOutput, 8_000);
    assert.equal(config.thinking, "low");
    assert.deepEqual(config.prices, { input: 4, output: 15, cacheRead: 0.3, cacheWrite: 3.75 });
  });

  test("an unknown local model gets conservative defaults and no key", () => {
    const config = createModelConfig({
      name: "Local",
      api: "openai-compatible",
      provider: "ollama",
      model: "qwen3-coder:30b",
    });
    assert.equal(config.baseUrl, "http://127.0.0.1:11434/v1");
    assert.deepEqual(config.apiKey, { type: "none" });
    assert.equal(config.catalogued, false);
    assert.equal(config.reasoning, false);
    assert.equal(config.thinking, "off");
    assert.equal(config.contextWindow, 128_000);
    assert.equal(config.maxOutput, 16_384);
    assert.deepEqual(config.prices, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
  });

  test("a provider's usual key variable is assumed only for its own endpoint", () => {
    const viaOpenRouter = createModelConfig({
      name: "c",
      api: "anthropic",
      provider: "openrouter",
      model: "anthropic/claude-sonnet-4.5",
    });
    assert.equal(viaOpenRouter.baseUrl, "https://openrouter.ai/api", "the catalogue's endpoint");
    assert.deepEqual(viaOpenRouter.apiKey, { type: "env", name: "OPENROUTER_API_KEY" });
    const elsewhere = {
      name: "c",
      api: "anthropic",
      model: "claude-sonnet-4-5",
      baseUrl: "https://gateway.example",
    };
    const error = configError(() => createModelConfig(elsewhere));
    assert.equal(error.field, "model.apiKey");
    assert.deepEqual(createModelConfig({ ...elsewhere, apiKeyEnv: "GATEWAY_KEY" }).apiKey, {
      type: "env",
      name: "GATEWAY_KEY",
    });
    const unknown = configError(() =>
      createModelConfig({ name: "x", api: "gemini", provider: "my-proxy", model: "m" }),
    );
    assert.equal(unknown.field, "model.apiKey");
  });

  test("max mode: larger limits, each defaulting to the normal one; none when not configured", () => {
    const base = { name: "m", api: "openai-compatible", model: "x", baseUrl: "http://h" } as const;
    assert.equal(createModelConfig(base).maxMode, null);
    assert.deepEqual(
      createModelConfig({ ...base, maxMode: { contextWindow: 1_000_000 } }).maxMode,
      {
        contextWindow: 1_000_000,
        maxOutput: 16_384,
      },
    );
    const wrong: [unknown, string][] = [
      [{ contextWindow: 1000 }, "model.maxMode.contextWindow"],
      [{ maxOutput: 10 }, "model.maxMode.maxOutput"],
      [{ contextWindow: 200_000, maxOutput: 300_000 }, "model.maxMode.maxOutput"],
      [{ context: 1 }, "model.maxMode.context"],
    ];
    for (const [maxMode, field] of wrong) {
      assert.throws(
        () => createModelConfig({ ...base, maxMode }),
        (error: unknown) => error instanceof ConfigError && error.field === field,
      );
    }
  });

  test("a thinking level on an unknown model makes it a reasoning model", () => {
    const config = createModelConfig({
      name: "r",
      api: "openai-compatible",
      baseUrl: "http://127.0.0.1:8000/v1/",
      model: "local-reasoner",
      thinking: "high",
    });
    assert.equal(config.reasoning, true);
    assert.equal(config.baseUrl, "http://127.0.0.1:8000/v1", "trailing slash removed");
  });

  test("the key is a secret: never serialised, printed or inspected", () => {
    const config = createModelConfig({
      name: "gpt",
      api: "openai-responses",
      model: "gpt-5-mini",
      apiKey: KEY,
      headers: { "X-Proxy-Token": "proxy-secret-42" },
    });
    assert.equal(config.apiKey.type === "value" && config.apiKey.value.reveal(), KEY);
    for (const text of [
      JSON.stringify(config),
      inspect(config, { depth: 10 }),
      `${String(config.apiKey.type === "value" && config.apiKey.value)}`,
    ]) {
      assert.equal(text.includes(KEY), false, text);
      assert.equal(text.includes("proxy-secret-42"), false, text);
    }
  });

  const invalid: [string, Record<string, unknown>, string, string][] = [
    ["missing name", { api: "anthropic", model: "m" }, "model.name", "is required"],
    ["unknown api", { name: "x", api: "cohere", model: "m" }, "model.api", "must be one of"],
    [
      "unknown field",
      { name: "x", api: "anthropic", model: "m", apikey: KEY },
      "model.apikey",
      "unknown field",
    ],
    [
      "key twice",
      { name: "x", api: "anthropic", model: "m", apiKey: KEY, apiKeyEnv: "K" },
      "model.apiKey",
      "not both",
    ],
    [
      "bad env name",
      { name: "x", api: "anthropic", model: "m", apiKeyEnv: "1-X" },
      "model.apiKeyEnv",
      "environment variable",
    ],
    [
      "empty key",
      { name: "x", api: "anthropic", model: "m", apiKey: " " },
      "model.apiKey",
      "non-empty",
    ],
    [
      "compatible without URL",
      { name: "x", api: "openai-compatible", model: "m" },
      "model.baseUrl",
      "required",
    ],
    [
      "bad URL",
      { name: "x", api: "anthropic", model: "m", baseUrl: "ftp://h" },
      "model.baseUrl",
      "http(s)",
    ],
    [
      "credentials in URL",
      { name: "x", api: "anthropic", model: "m", baseUrl: `https://u:${KEY}@h` },
      "model.baseUrl",
      "credentials",
    ],
    [
      "thinking on a non-reasoning model",
      { name: "x", api: "openai-chat", model: "gpt-4.1", thinking: "high" },
      "model.thinking",
      "not a reasoning model",
    ],
    [
      "output above window",
      { name: "x", api: "anthropic", model: "m", contextWindow: 1000, maxOutput: 2000 },
      "model.maxOutput",
      "contextWindow",
    ],
    [
      "negative price",
      { name: "x", api: "anthropic", model: "m", prices: { input: -1 } },
      "model.prices.input",
      "non-negative",
    ],
    [
      "header with newline",
      { name: "x", api: "anthropic", model: "m", headers: { "X-A": `a\r\nb: ${KEY}` } },
      "model.headers.X-A",
      "single-line",
    ],
    [
      "image only",
      { name: "x", api: "anthropic", model: "m", input: ["image"] },
      "model.input",
      "text",
    ],
  ];
  for (const [name, input, field, problem] of invalid) {
    test(`rejects ${name}, naming ${field}`, () => {
      const error = configError(() => createModelConfig(input));
      assert.equal(error.field, field);
      assert.ok(error.problem.includes(problem), error.problem);
      assert.equal(error.message.includes(KEY), false, "the error never shows the key");
    });
  }
});

describe("createModelConfigs", () => {
  test("validates each entry with its index in the field path", () => {
    const error = configError(() =>
      createModelConfigs([
        { name: "a", api: "anthropic", model: "m" },
        { name: "b", api: "gemini" },
      ]),
    );
    assert.equal(error.field, "models[1].model");
  });

  test("model names are unique", () => {
    const error = configError(() =>
      createModelConfigs([
        { name: "a", api: "anthropic", model: "m" },
        { name: "a", api: "gemini", model: "n" },
      ]),
    );
    assert.equal(error.field, "models[1].name");
    assert.match(error.problem, /duplicate/);
  });

  test("fallbacks name other models of the list; maxConcurrent is a positive integer", () => {
    const base = { api: "openai-compatible", model: "m", baseUrl: "http://127.0.0.1:1" };
    const [main] = createModelConfigs([
      { ...base, name: "main", fallbacks: ["spare"], maxConcurrent: 4 },
      { ...base, name: "spare" },
    ]);
    assert.deepEqual(main?.fallbacks, ["spare"]);
    assert.equal(main?.maxConcurrent, 4);
    const problems: [unknown[], RegExp][] = [
      [
        [{ ...base, name: "a", fallbacks: ["ghost"] }],
        /models\[0\]\.fallbacks\[0\]: no model is named "ghost"/,
      ],
      [
        [{ ...base, name: "a", fallbacks: ["a"] }],
        /fallbacks\[0\]: a model cannot fall back to itself/,
      ],
      [[{ ...base, name: "a", fallbacks: "b" }], /fallbacks: must be a list of model names/],
      [
        [
          { ...base, name: "a", fallbacks: ["b", "b"] },
          { ...base, name: "b" },
        ],
        /fallbacks\[1\]: is listed twice/,
      ],
      [[{ ...base, name: "a", maxConcurrent: 0 }], /models\[0\]\.maxConcurrent/],
    ];
    for (const [list, problem] of problems) {
      assert.throws(() => createModelConfigs(list), problem);
    }
  });

  test("an empty list is valid (the demo model is served then)", () => {
    assert.deepEqual(createModelConfigs([]), []);
    assert.equal(configError(() => createModelConfigs({})).field, "models");
  });
});

describe("model compaction settings", () => {
  const base = { name: "m", api: "openai-chat", model: "gpt-4.1", apiKey: "sk-x" } as const;

  test("defaults: automatic at 80% of the window, the model itself, 6 verbatim messages", () => {
    assert.deepEqual(createModelConfig(base).compaction, {
      auto: true,
      threshold: 0.8,
      summaryModel: null,
      tailMessages: 6,
      charsPerToken: 4,
    });
  });

  test("configured per model, and the summary model must be configured", () => {
    const configs = createModelConfigs([
      {
        ...base,
        compaction: { auto: false, threshold: 0.5, summaryModel: "cheap", tailMessages: 2 },
      },
      { ...base, name: "cheap" },
    ]);
    assert.deepEqual(configs[0]?.compaction, {
      auto: false,
      threshold: 0.5,
      summaryModel: "cheap",
      tailMessages: 2,
      charsPerToken: 4,
    });
    assert.throws(
      () => createModelConfigs([{ ...base, compaction: { summaryModel: "nope" } }]),
      (error: ConfigError) => error.field === "models[0].compaction.summaryModel",
    );
  });

  test("wrong values name the field", () => {
    for (const [compaction, field] of [
      [{ threshold: 1.5 }, "model.compaction.threshold"],
      [{ threshold: 0 }, "model.compaction.threshold"],
      [{ tailMessages: -1 }, "model.compaction.tailMessages"],
      [{ auto: "yes" }, "model.compaction.auto"],
      [{ window: 3 }, "model.compaction.window"],
      ["on", "model.compaction"],
    ] as const) {
      assert.throws(
        () => createModelConfig({ ...base, compaction }),
        (error: ConfigError) => error instanceof ConfigError && error.field === field,
      );
    }
  });
});
