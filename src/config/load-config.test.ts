import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, describe, test } from "node:test";
import { DEFAULT_SERVER_OPTIONS } from "../transport/server.ts";
import { ConfigFileError } from "./config-file-error.ts";
import { DEFAULT_HOST, DEFAULT_PORT, type LoadConfigInputs, loadConfig } from "./load-config.ts";
import type { Config, ConfigOverrides } from "./types.ts";

const dir = mkdtempSync(path.join(tmpdir(), "cursor-byok-config-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

function inputs(
  file: string,
  options: {
    env?: Record<string, string>;
    overrides?: ConfigOverrides;
    namedBy?: "--config";
  } = {},
): LoadConfigInputs {
  return {
    location: { path: file, namedBy: options.namedBy },
    cwd: "/work",
    env: options.env ?? {},
    platform: "linux",
    homeDir: "/home/me",
    ...(options.overrides === undefined ? {} : { overrides: options.overrides }),
  };
}

/** Writes `text` to a new file and loads it. */
function load(
  text: string,
  options: Parameters<typeof inputs>[1] = {},
): { config: Config; file: string } {
  files += 1;
  const file = path.join(dir, `config-${files}.yaml`);
  writeFileSync(file, text);
  return { config: loadConfig(inputs(file, options)), file };
}

/** The error text loading `text` fails with, with the file path replaced by `FILE`. */
function errorOf(text: string, options: Parameters<typeof inputs>[1] = {}): string {
  files += 1;
  const file = path.join(dir, `config-${files}.yaml`);
  writeFileSync(file, text);
  try {
    loadConfig(inputs(file, options));
  } catch (error) {
    assert.ok(error instanceof ConfigFileError, String(error));
    assert.ok(error.message.startsWith(file), error.message);
    return error.message.replace(file, "FILE");
  }
  assert.fail("the file loaded");
}

const FULL = `# a complete configuration
server:
  host: 127.0.0.1
  port: 9000
  accessTokenEnv: BYOK_TOKEN
  runSseContentType: connect
  http2: true
  maxStreams: 50
  maxConnections: 120
  blobCheckpoints: false
  blobWriteTimeoutMs: 2500
  blobReadTimeoutMs: 2000
data:
  directory: state
log:
  level: debug
defaultModel: local
models:
  - name: claude
    api: anthropic
    model: claude-sonnet-5-5
    apiKeyEnv: MY_ANTHROPIC_KEY
    thinking: high
  - name: local
    api: openai-compatible
    provider: ollama
    model: qwen3-coder:30b
    contextWindow: 65536
    maxOutput: 8192
    prices:
      input: 0.5
`;

describe("a valid file", () => {
  test("the blob read timeout is 3 s unless set, and never longer than the write timeout", () => {
    assert.equal(
      load("server:\n  blobWriteTimeoutMs: 1000\n").config.server.blobReadTimeoutMs,
      1000,
    );
    assert.equal(
      load("server:\n  blobWriteTimeoutMs: 1000\n  blobReadTimeoutMs: 1000\n").config.server
        .blobReadTimeoutMs,
      1000,
    );
    assert.equal(load("server:\n  blobReadTimeoutMs: 500\n").config.server.blobReadTimeoutMs, 500);
  });

  test("every setting is read", () => {
    const env = {
      BYOK_TOKEN: "token-value-123-of-32-characters-x",
      MY_ANTHROPIC_KEY: "sk-ant-secret",
    };
    const { config, file } = load(FULL, { env });
    assert.deepEqual(config.file, { path: file, exists: true });
    assert.equal(config.server.host, "127.0.0.1");
    assert.equal(config.server.port, 9000);
    assert.equal(config.server.runSseContentType, "connect");
    assert.equal(config.server.offerHttp2, true);
    assert.equal(config.server.maxStreams, 50);
    assert.equal(config.server.maxConnections, 120);
    assert.equal(config.server.blobCheckpoints, false);
    assert.equal(config.server.blobWriteTimeoutMs, 2500);
    assert.equal(config.server.blobReadTimeoutMs, 2000);
    assert.equal(config.server.accessToken.type, "env");
    assert.ok(config.server.accessToken.type === "env");
    assert.equal(config.server.accessToken.variable, "BYOK_TOKEN");
    assert.equal(config.server.accessToken.value.reveal(), "token-value-123-of-32-characters-x");
    assert.equal(config.dataDirectory, path.join(dir, "state"), "relative to the file");
    assert.equal(config.databasePath, path.join(dir, "state", "cursor-byok.db"));
    assert.equal(config.logLevel, "debug");
    assert.deepEqual(
      config.models.map(({ config: model, origin }) => [model.name, model.upstreamId, origin]),
      [
        ["local", "qwen3-coder:30b", { type: "file", field: "models[1]" }],
        ["claude", "claude-sonnet-5-5", { type: "file", field: "models[0]" }],
      ],
      "defaultModel comes first",
    );
    const [local, claude] = config.models;
    assert.equal(local?.config.baseUrl, "http://127.0.0.1:11434/v1");
    assert.equal(local?.config.contextWindow, 65536);
    assert.equal(local?.config.prices.input, 0.5);
    assert.deepEqual(claude?.config.apiKey, { type: "env", name: "MY_ANTHROPIC_KEY" });
    assert.equal(claude?.config.thinking, "high");
    assert.deepEqual(config.missingKeys, []);
  });

  test("compaction per model: threshold, summary model, verbatim tail, on/off", () => {
    const { config } = load(
      [
        "models:",
        "  - name: big",
        "    api: anthropic",
        "    model: claude-sonnet-4-5",
        "    apiKeyEnv: K",
        "    compaction:",
        "      threshold: 0.7",
        "      summaryModel: small",
        "      tailMessages: 4",
        "  - name: small",
        "    api: anthropic",
        "    model: claude-haiku-4-5",
        "    apiKeyEnv: K",
        "    compaction:",
        "      auto: false",
        "",
      ].join("\n"),
    );
    const [big, small] = config.models.map((m) => m.config.compaction);
    assert.deepEqual(big, {
      auto: true,
      threshold: 0.7,
      summaryModel: "small",
      tailMessages: 4,
      charsPerToken: 3.5,
    });
    assert.equal(small?.auto, false);
  });

  test("secrets are not in the configuration's serialised form", () => {
    const env = {
      BYOK_TOKEN: "token-value-123-of-32-characters-x",
      MY_ANTHROPIC_KEY: "sk-ant-secret",
    };
    const { config } = load(
      `${FULL}  - name: literal\n    api: openai-chat\n    model: gpt-6-luna\n    apiKey: sk-literal-secret\n`,
      { env },
    );
    const text = JSON.stringify(config);
    for (const secret of ["token-value-123", "sk-literal-secret", "sk-ant-secret"]) {
      assert.ok(!text.includes(secret), secret);
    }
  });

  test("an empty file, a file of comments and empty sections mean the defaults", () => {
    for (const text of ["", "# nothing yet\n", "server:\ndata:\nlog:\nmodels:\n  # - name: x\n"]) {
      const { config } = load(text);
      assert.equal(config.server.host, DEFAULT_HOST);
      assert.equal(config.server.port, DEFAULT_PORT);
      assert.equal(config.server.accessToken.type, "none");
      assert.equal(config.server.runSseContentType, "event-stream");
      assert.equal(config.server.offerHttp2, false);
      assert.equal(config.server.blobCheckpoints, true);
      assert.equal(config.server.blobWriteTimeoutMs, 10_000);
      assert.equal(config.server.blobReadTimeoutMs, 3_000);
      assert.equal(config.logLevel, "info");
      assert.equal(config.dataDirectory, "/home/me/.local/share/cursor-byok");
      assert.deepEqual(config.models, []);
    }
  });

  test("the defaults are the server's", () => {
    assert.equal(DEFAULT_HOST, DEFAULT_SERVER_OPTIONS.host);
    assert.equal(DEFAULT_PORT, DEFAULT_SERVER_OPTIONS.port);
  });

  test("IDE mode: the proxy port and the CONNECT ports, with their defaults", () => {
    assert.deepEqual(load("").config.ide, { proxyPort: 8766, allowConnectPorts: [443] });
    assert.deepEqual(
      load("ide:\n  proxyPort: 9443\n  allowConnectPorts: [443, 8443]\n").config.ide,
      {
        proxyPort: 9443,
        allowConnectPorts: [443, 8443],
      },
    );
  });

  test("no file at the default path: defaults, and the file is marked absent", () => {
    const file = path.join(dir, "absent", "config.yaml");
    const config = loadConfig(inputs(file));
    assert.deepEqual(config.file, { path: file, exists: false });
    assert.deepEqual(config.models, []);
  });

  test("~ in data.directory is the home directory", () => {
    const { config } = load("data:\n  directory: ~/byok\n");
    assert.equal(config.dataDirectory, "/home/me/byok");
  });

  test("a literal access token", () => {
    const { config } = load("server:\n  accessToken: literal-token-of-32-characters-xyz\n");
    assert.equal(config.server.accessToken.type, "value");
    assert.equal(config.server.accessToken.value.reveal(), "literal-token-of-32-characters-xyz");
  });
});

describe("an invalid file names the file, line, column, field and problem", () => {
  const cases: [string, string, string][] = [
    [
      "YAML syntax error",
      "server:\n  port: [1, 2\n",
      "FILE:3:1: YAML syntax error: Flow sequence in block collection must be sufficiently indented and end with a ]",
    ],
    [
      "an alias to no anchor (the alias text, maybe a key, is not echoed)",
      "models:\n  - name: a\n    api: anthropic\n    model: m\n    apiKey: *sk-SECRET-ALIAS\n",
      "FILE: YAML error: an alias (*name) refers to no anchor defined before it, or aliases expand too much",
    ],
    [
      "duplicate key",
      "log:\n  level: info\n  level: debug\n",
      "FILE:3:3: YAML syntax error: Map keys must be unique",
    ],
    [
      "unknown top-level field",
      "server:\n  port: 1\nmodel:\n  - name: x\n",
      "FILE:3:1: model: unknown field (expected one of server, data, log, models, defaultModel, helperModel, envShortcuts, ide, web, subagents, team)",
    ],
    [
      "unknown server field",
      "server:\n  prot: 80\n",
      "FILE:2:3: server.prot: unknown field (expected one of host, port, accessToken, accessTokenEnv, runSseContentType, http2, maxStreams, maxConnections, blobCheckpoints, blobWriteTimeoutMs, blobReadTimeoutMs, users, advertiseUrl)",
    ],
    [
      "a team server over plain http to another machine",
      "team:\n  server: http://byok.example.com\n",
      "FILE:2:11: team.server: must be https:// (your team token travels to it); http:// only for a server on this machine",
    ],
    [
      "a team server with a path",
      "team:\n  server: https://byok.example.com/agent\n",
      "FILE:2:11: team.server: must be the server's address alone (https://host[:port]), without a path",
    ],
    [
      "a team section without a server",
      "team:\n  tokenEnv: MY_TOKEN\n",
      "FILE:2:3: team.server: is required: the team server's address",
    ],
    [
      "unknown ide field",
      "ide:\n  port: 80\n",
      "FILE:2:3: ide.port: unknown field (expected one of proxyPort, allowConnectPorts)",
    ],
    [
      "an ide proxy port out of range",
      "ide:\n  proxyPort: 70000\n",
      "FILE:2:14: ide.proxyPort: must be an integer from 1 to 65535",
    ],
    [
      "allowed CONNECT ports that are not ports",
      "ide:\n  allowConnectPorts: [443, 0]\n",
      "FILE:2:22: ide.allowConnectPorts: must be a list of ports from 1 to 65535",
    ],
    [
      "unknown model field",
      "models:\n  - name: a\n    api: anthropic\n    modle: claude-sonnet-5-5\n",
      "FILE:4:5: models[0].modle: unknown field",
    ],
    [
      "unknown price field",
      "models:\n  - name: a\n    api: anthropic\n    model: m\n    apiKeyEnv: K\n    prices:\n      inputs: 1\n",
      "FILE:7:7: models[0].prices.inputs: unknown field",
    ],
    [
      "a port that is text",
      "server:\n  port: eighty\n",
      "FILE:2:9: server.port: must be an integer from 0 to 65535 (0: any free port)",
    ],
    [
      "a port out of range",
      "server:\n  port: 70000\n",
      "FILE:2:9: server.port: must be an integer from 0 to 65535 (0: any free port)",
    ],
    ["http2 as text", "server:\n  http2: yes\n", "FILE:2:10: server.http2: must be true or false"],
    ["server as a list", "server:\n  - 1\n", "FILE:2:3: server: must be a mapping"],
    [
      "the file as a list",
      "- a\n- b\n",
      "FILE:1:1: the file must be a mapping of settings (server, data, log, models, defaultModel, helperModel, envShortcuts, ide, web, subagents, team)",
    ],
    ["models as a mapping", "models:\n  a: 1\n", "FILE:2:3: models: must be a list"],
    [
      "a context window that is text",
      "models:\n  - name: a\n    api: anthropic\n    model: m\n    apiKeyEnv: K\n    contextWindow: big\n",
      "FILE:6:20: models[0].contextWindow: must be a positive integer",
    ],
    [
      "a compaction threshold over 1",
      "models:\n  - name: a\n    api: anthropic\n    model: m\n    apiKeyEnv: K\n    compaction:\n      threshold: 2\n",
      "FILE:7:18: models[0].compaction.threshold: must be a number in (0, 1]",
    ],
    [
      "a summary model that is not configured",
      "models:\n  - name: a\n    api: anthropic\n    model: m\n    apiKeyEnv: K\n    compaction:\n      summaryModel: b\n",
      "FILE:7:21: models[0].compaction.summaryModel: must name a configured model",
    ],
    [
      "an unknown API kind",
      "models:\n  - name: a\n    api: antropic\n    model: m\n",
      "FILE:3:10: models[0].api: must be one of openai-chat, openai-responses, anthropic, gemini, openai-compatible",
    ],
    [
      "a model without a name",
      "models:\n  - api: anthropic\n    model: m\n",
      "FILE:2:5: models[0].name: is required",
    ],
    [
      "a second model with the same name",
      "models:\n  - {name: a, api: anthropic, model: m}\n  - {name: a, api: gemini, model: n}\n",
      'FILE:3:12: models[1].name: duplicate model name "a"',
    ],
    [
      "a compatible endpoint without a base URL",
      "models:\n  - name: a\n    api: openai-compatible\n    model: m\n",
      "FILE:2:5: models[0].baseUrl: is required for an openai-compatible endpoint",
    ],
    [
      "a key variable name that is not one",
      "models:\n  - name: a\n    api: anthropic\n    model: m\n    apiKeyEnv: my key\n",
      "FILE:5:16: models[0].apiKeyEnv: must be an environment variable name",
    ],
    [
      "a key given twice",
      "models:\n  - name: a\n    api: anthropic\n    model: m\n    apiKey: x\n    apiKeyEnv: K\n",
      "FILE:5:13: models[0].apiKey: give either apiKey or apiKeyEnv, not both",
    ],
    [
      "a log level that does not exist",
      "log:\n  level: loud\n",
      "FILE:2:10: log.level: must be one of fatal, error, warn, info, debug, trace, silent",
    ],
    [
      "a default model that does not exist",
      "defaultModel: nope\nmodels:\n  - {name: a, api: anthropic, model: m, apiKeyEnv: K}\n",
      'FILE:1:15: defaultModel: no model is named "nope"; the models are a',
    ],
    [
      "a helper model that does not exist",
      "helperModel: nope\nmodels:\n  - {name: a, api: anthropic, model: m, apiKeyEnv: K}\n",
      'FILE:1:14: helperModel: no model is named "nope"; the models are a',
    ],
    [
      "a subagent model that does not exist",
      "subagents:\n  models:\n    explore: nope\nmodels:\n  - {name: a, api: anthropic, model: m, apiKeyEnv: K}\n",
      'FILE:3:14: subagents.models.explore: no model is named "nope"; the models are a',
    ],
    [
      "subagent models that are not a mapping",
      "subagents:\n  models: [a]\nmodels:\n  - {name: a, api: anthropic, model: m, apiKeyEnv: K}\n",
      "FILE:2:11: subagents.models: must be a mapping of subagent type to model name (explore: fast)",
    ],
    [
      "an unknown subagents field",
      "subagents:\n  model: a\n",
      "FILE:2:3: subagents.model: unknown field (expected one of models, maxConcurrent, maxSteps)",
    ],
    [
      "a subagent limit that is not a positive integer",
      "subagents:\n  maxConcurrent: 0\n",
      "FILE:2:18: subagents.maxConcurrent: must be a positive integer",
    ],
    [
      "an access token variable that is not set",
      "server:\n  accessTokenEnv: BYOK_TOKEN\n",
      "FILE:2:19: server.accessTokenEnv: environment variable BYOK_TOKEN is not set; it must hold the access token clients present",
    ],
    [
      "a stream cap that is not a positive integer",
      "server:\n  maxStreams: 0\n",
      "FILE:2:15: server.maxStreams: must be a positive integer",
    ],
    [
      "a blob read timeout longer than the write timeout",
      "server:\n  blobWriteTimeoutMs: 1000\n  blobReadTimeoutMs: 1500\n",
      "FILE:3:22: server.blobReadTimeoutMs: must not be longer than server.blobWriteTimeoutMs (1000)",
    ],
    [
      "a literal access token too short to guard the keys",
      "server:\n  accessToken: guessable\n",
      "FILE:2:16: server.accessToken: the token holds 9 characters; an access token needs at least 32 so it cannot be guessed (e.g. `openssl rand -hex 32`)",
    ],
    [
      "an access token given twice",
      "server:\n  accessToken: a\n  accessTokenEnv: B\n",
      "FILE:2:16: server.accessToken: give either accessToken or accessTokenEnv, not both",
    ],
  ];
  for (const [name, text, expected] of cases) {
    test(name, () => {
      assert.equal(errorOf(text), expected);
    });
  }

  test("a wrong value is described, never echoed", () => {
    const message = errorOf(
      "models:\n  - name: a\n    api: anthropic\n    model: m\n    apiKey: 12345678901\n",
    );
    assert.equal(message, "FILE:5:13: models[0].apiKey: must be a non-empty string");
  });

  test("a file named by --config must exist", () => {
    const file = path.join(dir, "missing.yaml");
    assert.throws(
      () => loadConfig(inputs(file, { namedBy: "--config" })),
      (error: unknown) =>
        error instanceof ConfigFileError &&
        error.message ===
          `${file}: no such file (named by --config); create it with \`cursor-byok config init\``,
    );
  });

  test("a directory is not a file", () => {
    assert.throws(
      () => loadConfig(inputs(dir)),
      (error: unknown) =>
        error instanceof ConfigFileError && error.message === `${dir}: is a directory, not a file`,
    );
  });
});

describe("keys", () => {
  test("a model whose named key variable is not set is reported at apiKeyEnv", () => {
    const { config, file } = load(
      "models:\n  - name: a\n    api: anthropic\n    model: claude-sonnet-5-5\n    apiKeyEnv: MY_KEY\n",
    );
    assert.deepEqual(config.missingKeys, [
      {
        model: "a",
        variable: "MY_KEY",
        message: `${file}:5:16: models[0].apiKeyEnv: environment variable MY_KEY is not set`,
      },
    ]);
  });

  test("a model relying on its provider's usual variable is reported at the entry", () => {
    const { config, file } = load(
      "models:\n  - name: a\n    api: anthropic\n    model: claude-sonnet-5-5\n",
      { env: { ANTHROPIC_API_KEY: " " } },
    );
    assert.deepEqual(
      config.missingKeys.map((missing) => missing.message),
      [
        `${file}:2:5: models[0]: environment variable ANTHROPIC_API_KEY is not set (the usual key ` +
          "variable of provider anthropic); set it, or give apiKeyEnv or apiKey",
      ],
    );
  });

  test("set variables, literal keys and keyless endpoints are not missing", () => {
    const { config } = load(
      [
        "models:",
        "  - {name: a, api: anthropic, model: m, apiKeyEnv: MY_KEY}",
        "  - {name: b, api: gemini, model: n, apiKey: literal}",
        "  - {name: c, api: openai-compatible, provider: ollama, model: q}",
        "",
      ].join("\n"),
      { env: { MY_KEY: "k" } },
    );
    assert.deepEqual(config.missingKeys, []);
  });
});

describe("environment shortcuts and precedence", () => {
  test("a provider key variable alone offers that provider's models", () => {
    const { config } = load("", { env: { OPENAI_API_KEY: "sk-1", GEMINI_API_KEY: "g-1" } });
    assert.deepEqual(
      config.models.map(({ config: model, origin }) => [model.name, origin]),
      [
        ["gpt-6.2-sol", { type: "env", variable: "OPENAI_API_KEY" }],
        ["gpt-6.1-terra", { type: "env", variable: "OPENAI_API_KEY" }],
        ["gpt-6-luna", { type: "env", variable: "OPENAI_API_KEY" }],
        ["gemini-3.1-pro-preview", { type: "env", variable: "GEMINI_API_KEY" }],
        ["gemini-3.5-flash", { type: "env", variable: "GEMINI_API_KEY" }],
      ],
    );
  });

  test("the file wins over the shortcuts: its models come first, a same-named one replaces the shortcut", () => {
    const { config } = load(
      "models:\n  - name: gpt-6-luna\n    api: openai-chat\n    model: gpt-6-luna\n    maxOutput: 1000\n  - {name: mine, api: anthropic, model: m}\n",
      { env: { OPENAI_API_KEY: "sk-1", ANTHROPIC_API_KEY: "a-1" } },
    );
    const names = config.models.map(({ config: model }) => model.name);
    assert.deepEqual(names.slice(0, 4), ["gpt-6-luna", "mine", "gpt-6.2-sol", "gpt-6.1-terra"]);
    assert.equal(names.filter((name) => name === "gpt-6-luna").length, 1);
    const luna = config.models[0];
    assert.deepEqual(luna?.origin, { type: "file", field: "models[0]" });
    assert.equal(luna?.config.api, "openai-chat");
    assert.equal(luna?.config.maxOutput, 1000);
  });

  test("envShortcuts: false offers only the file's models", () => {
    const { config } = load("envShortcuts: false\n", { env: { OPENAI_API_KEY: "sk-1" } });
    assert.deepEqual(config.models, []);
  });

  test("defaultModel can pick a shortcut model", () => {
    const { config } = load("defaultModel: gpt-6-luna\n", { env: { OPENAI_API_KEY: "sk-1" } });
    assert.deepEqual(
      config.models.map(({ config: model }) => model.name),
      ["gpt-6-luna", "gpt-6.2-sol", "gpt-6.1-terra"],
    );
  });

  test("helperModel names the model for titles and git text, and leaves the offer order alone", () => {
    const { config } = load("helperModel: gpt-6.1-terra\n", { env: { OPENAI_API_KEY: "sk-1" } });
    assert.equal(config.helperModel, "gpt-6.1-terra");
    assert.equal(config.models[0]?.config.name, "gpt-6.2-sol");
    assert.equal(load("", { env: { OPENAI_API_KEY: "sk-1" } }).config.helperModel, undefined);
  });

  test("subagents.models picks a model per subagent type; absent, every type runs on the parent's", () => {
    const text = "subagents:\n  models:\n    explore: gpt-6-luna\n    reviewer: gpt-6.1-terra\n";
    const { config } = load(text, { env: { OPENAI_API_KEY: "sk-1" } });
    assert.deepEqual(config.subagentModels, { explore: "gpt-6-luna", reviewer: "gpt-6.1-terra" });
    assert.equal(load("", { env: { OPENAI_API_KEY: "sk-1" } }).config.subagentModels, undefined);
  });

  test("subagents.maxConcurrent and maxSteps limit subagents; absent, the server's defaults", () => {
    const text = "subagents:\n  maxConcurrent: 2\n  maxSteps: 10\n";
    const { config } = load(text, { env: { OPENAI_API_KEY: "sk-1" } });
    assert.equal(config.subagentMaxConcurrent, 2);
    assert.equal(config.subagentMaxSteps, 10);
    const none = load("", { env: { OPENAI_API_KEY: "sk-1" } }).config;
    assert.equal(none.subagentMaxConcurrent, undefined);
    assert.equal(none.subagentMaxSteps, undefined);
  });

  test("flags win over the file", () => {
    const text =
      "server:\n  host: localhost\n  port: 9000\ndata:\n  directory: /srv/byok\nlog:\n  level: warn\n";
    assert.deepEqual(
      (({ server, dataDirectory, logLevel }) => [
        server.host,
        server.port,
        dataDirectory,
        logLevel,
      ])(load(text).config),
      ["localhost", 9000, "/srv/byok", "warn"],
    );
    const { config } = load(text, {
      overrides: { host: "127.0.0.2", port: 0, dataDirectory: "here", logLevel: "error" },
    });
    assert.equal(config.server.host, "127.0.0.2");
    assert.equal(config.server.port, 0);
    assert.equal(
      config.dataDirectory,
      "/work/here",
      "a relative --data-dir is relative to the working directory",
    );
    assert.equal(config.logLevel, "error");
  });
});

test("an access token from the environment must be long enough, and is never echoed", () => {
  const message = errorOf("server:\n  accessTokenEnv: BYOK_TOKEN\n", {
    env: { BYOK_TOKEN: "short-secret" },
  });
  assert.equal(
    message,
    "FILE:2:19: server.accessTokenEnv: environment variable BYOK_TOKEN holds 12 characters; an access token needs at least 32 so it cannot be guessed (e.g. `openssl rand -hex 32`)",
  );
  assert.ok(!message.includes("short-secret"));
});

test("team: the server's origin and the user's token from the named variable, never echoed", () => {
  const { config } = load(
    "team:\n  server: https://byok.example.com/\n  tokenEnv: MY_TEAM_TOKEN\n",
    {
      env: { MY_TEAM_TOKEN: " cbk_the-token " },
    },
  );
  assert.equal(config.team?.server, "https://byok.example.com");
  assert.equal(config.team?.tokenVariable, "MY_TEAM_TOKEN");
  assert.equal(config.team?.token?.reveal(), "cbk_the-token");
  assert.ok(!JSON.stringify(config).includes("cbk_the-token"));
  const unset = load("team:\n  server: http://127.0.0.1:8765\n").config.team;
  assert.deepEqual(
    { server: unset?.server, variable: unset?.tokenVariable, token: unset?.token },
    { server: "http://127.0.0.1:8765", variable: "CURSOR_BYOK_TEAM_TOKEN", token: undefined },
  );
});
