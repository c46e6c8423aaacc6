/** The command line in-process (fast): dispatch, help, `models --json`, `config init`, doctor's port check. */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, describe, test } from "node:test";
import packageJson from "../../package.json" with { type: "json" };
import { toStarterConfig } from "../config/index.ts";
import { runCli } from "./run-cli.ts";
import { createTempHome, createTestIO } from "./testing.ts";

const home = createTempHome();
after(() => home.cleanup());
const INFO = { version: packageJson.version };

async function run(args: string[], env: Record<string, string> = {}) {
  const io = createTestIO({ home: home.dir, env: { ...home.env, ...env } });
  const code = await runCli(args, io, INFO);
  return { code, out: io.out(), err: io.err() };
}

describe("dispatch", () => {
  test("--version", async () => {
    assert.deepEqual(await run(["--version"]), {
      code: 0,
      out: `cursor-byok ${packageJson.version}\n`,
      err: "",
    });
  });

  test("help <command> is <command> --help", async () => {
    for (const name of [["models"], ["config", "init"], ["doctor"], ["agent"], ["serve"]]) {
      const viaHelp = await run(["help", ...name]);
      const viaFlag = await run([...name, "--help"]);
      assert.equal(viaHelp.code, 0);
      assert.equal(viaHelp.out, viaFlag.out);
      assert.ok(viaHelp.out.startsWith(`Usage: cursor-byok ${name.join(" ")}`));
    }
    assert.equal((await run(["help", "nope"])).code, 2);
  });

  test("help shows the platform's config path", async () => {
    const { out } = await run(["models", "--help"]);
    assert.ok(out.includes(home.configPath), out);
  });

  test("`config` needs a subcommand", async () => {
    const result = await run(["config"]);
    assert.equal(result.code, 2);
    assert.equal(
      result.err,
      "cursor-byok config: config needs a subcommand: init\nRun `cursor-byok config --help` for usage.\n",
    );
    assert.equal((await run(["config", "--help"])).code, 0);
  });

  test("bad flag values are usage errors", async () => {
    for (const [args, message] of [
      [["serve", "--port", "80a"], "--port must be an integer from 0 to 65535 (0: any free port)"],
      [
        ["serve", "--port", "65536"],
        "--port must be an integer from 0 to 65535 (0: any free port)",
      ],
      [
        ["serve", "--log-level", "loud"],
        "--log-level must be one of fatal, error, warn, info, debug, trace, silent",
      ],
      [["doctor", "--timeout", "0"], "--timeout must be a positive number of seconds"],
      [
        ["doctor", "--url", "localhost:8765"],
        "--url must be a server address such as http://127.0.0.1:8765",
      ],
    ] as const) {
      const result = await run([...args]);
      assert.equal(result.code, 2, args.join(" "));
      assert.equal(result.err.split("\n")[0], `cursor-byok ${args[0]}: ${message}`);
    }
  });

  test("a configuration error names the file and line (exit 1)", async () => {
    const file = path.join(home.dir, "bad-models.yaml");
    writeFileSync(file, "models: 3\n");
    const result = await run(["models", "--config", file]);
    assert.equal(result.code, 1);
    assert.equal(
      result.err,
      `cursor-byok: configuration error:\n  ${file}:1:9: models: must be a list\n` +
        "Fix it, then check the whole setup with `cursor-byok doctor`.\n",
    );
  });
});

describe("models --json", () => {
  test("one row per model, file models first, keys only by source", async () => {
    const file = path.join(home.dir, "models.yaml");
    writeFileSync(
      file,
      [
        "models:",
        "  - name: local",
        "    api: openai-compatible",
        "    provider: ollama",
        "    model: qwen3-coder:30b",
        "  - name: gw",
        "    api: openai-chat",
        "    baseUrl: https://gw.example.com/v1?key=secret-in-url",
        "    model: gpt-6-luna",
        "    apiKey: sk-literal-secret",
        "",
      ].join("\n"),
    );
    const result = await run(["models", "--json", "--config", file], {
      GEMINI_API_KEY: "g-secret",
    });
    assert.equal(result.code, 0, result.err);
    const rows = JSON.parse(result.out) as Record<string, unknown>[];
    assert.deepEqual(
      rows.map((row) => [row.name, row.default, row.source, row.key, row.baseUrl]),
      [
        ["local", true, "config file models[0]", "none needed", "http://127.0.0.1:11434/v1"],
        [
          "gw",
          false,
          "config file models[1]",
          "apiKey in the config file",
          "https://gw.example.com/v1",
        ],
        [
          "gemini-3.1-pro-preview",
          false,
          "GEMINI_API_KEY shortcut",
          "GEMINI_API_KEY (set)",
          "https://generativelanguage.googleapis.com/v1beta",
        ],
        [
          "gemini-3.5-flash",
          false,
          "GEMINI_API_KEY shortcut",
          "GEMINI_API_KEY (set)",
          "https://generativelanguage.googleapis.com/v1beta",
        ],
      ],
    );
    for (const secret of ["secret-in-url", "sk-literal-secret", "g-secret"]) {
      assert.ok(!result.out.includes(secret), secret);
    }
    assert.deepEqual(
      (({ contextWindow, reasoning, thinking, prices }) => ({
        contextWindow,
        reasoning,
        thinking,
        prices,
      }))(
        rows[2] as { contextWindow: number; reasoning: boolean; thinking: string; prices: unknown },
      ),
      {
        contextWindow: 1048576,
        reasoning: true,
        thinking: "medium",
        prices: { input: 2, output: 12, cacheRead: 0.2, cacheWrite: 0 },
      },
    );
  });

  test("a model whose key variable is not set is listed with a warning", async () => {
    const file = path.join(home.dir, "unset.yaml");
    writeFileSync(file, "models:\n  - {name: c, api: anthropic, model: m, apiKeyEnv: UNSET_KEY}\n");
    const result = await run(["models", "--config", file]);
    assert.equal(result.code, 0);
    assert.match(result.out, /UNSET_KEY \(NOT SET\)/);
    assert.ok(
      result.out.includes(
        `warning: ${file}:2:52: models[0].apiKeyEnv: environment variable UNSET_KEY is not set`,
      ),
    );
  });
});

describe("config init", () => {
  test("creates the default file, readable by its owner only", async () => {
    const result = await run(["config", "init"]);
    assert.equal(result.code, 0, result.err);
    assert.equal(
      readFileSync(home.configPath, "utf8"),
      toStarterConfig({
        dataDirectory: path.join(home.dir, "data", "cursor-byok"),
      }),
    );
    assert.equal(statSync(home.configPath).mode & 0o777, 0o600);
  });

  test("--force replaces the file and keeps the old one as .bak", async () => {
    const file = path.join(home.dir, "forced", "config.yaml");
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, "# mine\n");
    const refused = await run(["config", "init", "--config", file]);
    assert.equal(refused.code, 1);
    assert.equal(readFileSync(file, "utf8"), "# mine\n");
    const forced = await run(["config", "init", "--config", file, "--force"]);
    assert.equal(forced.code, 0, forced.err);
    assert.ok(forced.out.startsWith(`Wrote ${file} (the previous file is kept as ${file}.bak).\n`));
    assert.equal(readFileSync(`${file}.bak`, "utf8"), "# mine\n");
    assert.match(readFileSync(file, "utf8"), /^# cursor-byok configuration/);
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  test("--force twice never overwrites a backup; write failures are one line", async () => {
    const file = path.join(home.dir, "twice", "config.yaml");
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, "# hand-written\n");
    assert.equal((await run(["config", "init", "--config", file, "--force"])).code, 0);
    const second = await run(["config", "init", "--config", file, "--force"]);
    assert.equal(second.code, 0, second.err);
    assert.equal(readFileSync(`${file}.bak`, "utf8"), "# hand-written\n");
    assert.match(readFileSync(`${file}.bak.1`, "utf8"), /^# cursor-byok configuration/);
    const blocked = path.join(home.dir, "a-file");
    writeFileSync(blocked, "");
    const failed = await run(["config", "init", "--config", path.join(blocked, "x.yaml")]);
    assert.equal(failed.code, 1);
    assert.match(
      failed.err,
      /^cursor-byok: cannot write .*x\.yaml \((EEXIST|ENOTDIR)\): check the path\.\n$/,
    );
  });

  test("CURSOR_BYOK_CONFIG names the file", async () => {
    const file = path.join(home.dir, "from-env.yaml");
    const result = await run(["config", "init"], { CURSOR_BYOK_CONFIG: file });
    assert.equal(result.code, 0);
    assert.match(readFileSync(file, "utf8"), /^# cursor-byok configuration/);
  });
});

describe("doctor: the port", () => {
  test("a port held by another program fails", async () => {
    const other = createServer((_request, response) => {
      response.writeHead(404);
      response.end("not here");
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = other.address() as AddressInfo;
      const result = await run(["doctor", "--port", String(port), "--data-dir", home.dir]);
      assert.equal(result.code, 1);
      assert.ok(
        result.out.includes(
          `FAIL  port      127.0.0.1:${port} is in use by another program\n` +
            "                fix: stop that program, or choose another port with --port or server.port\n",
        ),
        result.out,
      );
    } finally {
      other.closeAllConnections();
      await new Promise((resolve) => other.close(resolve));
    }
  });
});

describe("doctor: a port held by someone else", () => {
  test("is probed without the access token", async () => {
    const seen: (string | undefined)[] = [];
    const other = createServer((request, response) => {
      seen.push(request.headers.authorization);
      response.writeHead(404);
      response.end();
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = other.address() as AddressInfo;
      const file = path.join(home.dir, "token.yaml");
      writeFileSync(file, "server:\n  accessTokenEnv: BYOK_TOKEN\n");
      const result = await run(["doctor", "--config", file, "--port", String(port)], {
        BYOK_TOKEN: "token-must-stay-home-0123456789abcdef",
      });
      assert.equal(result.code, 1);
      assert.ok(seen.length > 0, "the port was probed");
      assert.deepEqual(
        seen,
        seen.map(() => undefined),
      );
    } finally {
      other.closeAllConnections();
      await new Promise((resolve) => other.close(resolve));
    }
  });
});

describe("serve", () => {
  test("a port in use is reported with what to do (exit 1)", async () => {
    const other = createServer();
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = other.address() as AddressInfo;
      const result = await run(["serve", "--port", String(port), "--data-dir", home.dir]);
      assert.equal(result.code, 1);
      assert.equal(
        result.err,
        `cursor-byok: port ${port} on 127.0.0.1 is already in use. Is cursor-byok already running? ` +
          "Stop it, or pick another port with --port or server.port.\n",
      );
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});
