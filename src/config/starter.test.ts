import assert from "node:assert/strict";
import { test } from "node:test";
import { toConfig } from "./load-config.ts";
import { toStarterConfig } from "./starter.ts";

const starter = toStarterConfig({ dataDirectory: "/home/me/.local/share/cursor-byok" });
const inputs = (env: Record<string, string> = {}) => ({
  location: { path: "/home/me/.config/cursor-byok/config.yaml", namedBy: undefined },
  cwd: "/work",
  env,
  platform: "linux",
  homeDir: "/home/me",
});

/** The starter with every commented setting and model example switched on. */
function uncommentAll(text: string): string {
  return text
    .split("\n")
    .map((line) =>
      line
        .replace(/^ {2}# (?=(accessTokenEnv|runSseContentType|http2):)/, "  ")
        .replace(/^# (?=(data:| {2}directory:|envShortcuts:|defaultModel:|helperModel:))/, "")
        .replace(/^ {2}# (?=- | {2,}\S)/, "  "),
    )
    .join("\n");
}

test("the starter configuration is valid as written: defaults, no models of its own", () => {
  const config = toConfig(starter, inputs());
  assert.equal(config.server.host, "127.0.0.1");
  assert.equal(config.server.port, 8765);
  assert.equal(config.server.accessToken.type, "none");
  assert.equal(config.logLevel, "info");
  assert.deepEqual(config.models, []);
  assert.deepEqual(
    toConfig(starter, inputs({ ANTHROPIC_API_KEY: "a" })).models.map(({ config: m }) => m.name),
    ["claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5"],
  );
});

test("every commented setting and model example is valid once uncommented", () => {
  const text = uncommentAll(starter);
  assert.notEqual(text, starter);
  const config = toConfig(
    text,
    inputs({ CURSOR_BYOK_TOKEN: "a-long-random-token-for-tests-0123456789" }),
  );
  assert.deepEqual(
    config.models.map(({ config: model }) => [model.name, model.api, model.provider]),
    [
      ["claude", "anthropic", "anthropic"],
      ["gpt", "openai-responses", "openai"],
      ["gemini", "gemini", "google"],
      ["kimi", "openai-compatible", "openrouter"],
      ["local-qwen", "openai-compatible", "ollama"],
      ["team-gateway", "openai-chat", "openai"],
    ],
  );
  assert.equal(config.server.accessToken.type, "env");
  assert.equal(config.dataDirectory, "/home/me/.local/share/cursor-byok");
  assert.deepEqual(
    config.missingKeys.map((missing) => missing.variable),
    [
      "ANTHROPIC_API_KEY",
      "OPENAI_API_KEY",
      "GEMINI_API_KEY",
      "OPENROUTER_API_KEY",
      "TEAM_GATEWAY_KEY",
    ],
  );
  assert.equal(config.models[4]?.config.apiKey.type, "none", "the local server needs no key");
});
