/**
 * The `cursor-byok` command as users run it: real subprocesses on this Node, a temporary home,
 * servers on 127.0.0.1 only.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import { createCursorClient } from "../transport/testing/index.ts";
import { COMMANDS } from "./run-cli.ts";
import {
  createTempHome,
  MAIN,
  runCliProcess,
  type ServeProcess,
  startServeProcess,
} from "./testing.ts";

const home = createTempHome();
after(() => home.cleanup());

/** A config file in the temp home; returns its path. */
function writeConfig(name: string, text: string): string {
  const file = path.join(home.dir, name);
  writeFileSync(file, text);
  return file;
}

// The groups run side by side (each spawns its own processes); tests within a server's group run in order.
describe("cursor-byok as a subprocess", { concurrency: true }, () => {
  test("output into a reader that stops early (| head) ends quietly", async () => {
    const child = spawn(process.execPath, [MAIN, "--help"], {
      env: home.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const code = await new Promise((resolve) => child.once("close", resolve));
    assert.equal(code, 0, stderr);
    assert.doesNotMatch(stderr, /EPIPE|Error/);
  });

  describe("--help", () => {
    test("the overview and every command's help", async () => {
      const runs = await Promise.all([
        runCliProcess(["--help"], { env: home.env }),
        ...COMMANDS.map((command) =>
          runCliProcess([...command.name.split(" "), "--help"], { env: home.env }),
        ),
      ]);
      const [overview, ...helps] = runs;
      assert.equal(overview?.code, 0);
      for (const command of COMMANDS) {
        assert.match(
          overview?.stdout ?? "",
          new RegExp(`\\n  ${command.name} +${toRegexSource(command.summary)}`),
        );
      }
      helps.forEach((run, index) => {
        const name = COMMANDS[index]?.name ?? "";
        assert.equal(run.code, 0, run.stderr);
        assert.equal(run.stderr, "");
        assert.ok(run.stdout.startsWith(`Usage: cursor-byok ${name}`), run.stdout);
        assert.match(run.stdout, /-h, --help/);
      });
    });

    test("an unknown command or flag is a usage error (exit 2)", async () => {
      const unknown = await runCliProcess(["frobnicate"], { env: home.env });
      assert.equal(unknown.code, 2);
      assert.equal(
        unknown.stderr,
        'cursor-byok: unknown command "frobnicate"\nRun `cursor-byok --help` for the commands.\n',
      );
      const flag = await runCliProcess(["models", "--colour"], { env: home.env });
      assert.equal(flag.code, 2);
      assert.match(flag.stderr, /^cursor-byok models: Unknown option '--colour'/);
      assert.match(flag.stderr, /Run `cursor-byok models --help` for usage\.\n$/);
    });
  });

  describe("models", () => {
    test("lists the shortcut models with the default marked, and never a key", async () => {
      const secret = "sk-test-never-printed-0123456789";
      const run = await runCliProcess(["models"], { env: { ...home.env, OPENAI_API_KEY: secret } });
      assert.equal(run.code, 0, run.stderr);
      const lines = run.stdout.split("\n");
      assert.deepEqual(lines.slice(0, 6), [
        "Models Cursor will see (* = default), from environment variables (no config file):",
        "",
        "   NAME           PROVIDER  UPSTREAM MODEL  CONTEXT  THINKING  OPTIONS         PRICE $/M                       KEY",
        "*  gpt-6.2-sol    openai    gpt-6.2-sol     272k     medium    effort low-max  in 2 / out 10 / cached 0.1      OPENAI_API_KEY (set)",
        "   gpt-6.1-terra  openai    gpt-6.1-terra   272k     medium    effort low-max  in 1 / out 5 / cached 0.05      OPENAI_API_KEY (set)",
        "   gpt-6-luna     openai    gpt-6-luna      272k     medium    effort low-max  in 0.1 / out 0.5 / cached 0.01  OPENAI_API_KEY (set)",
      ]);
      assert.ok(!run.stdout.includes(secret) && !run.stderr.includes(secret));
    });

    test("with nothing configured, the demo model and how to add a provider", async () => {
      const run = await runCliProcess(["models"], { env: home.env });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /\n\* {2}demo {2}cursor-byok {2}demo/);
      assert.match(run.stdout, /No provider is configured/);
    });
  });

  describe("serve", () => {
    test("a second server on the same data directory is refused, naming the first", async () => {
      const data = path.join(home.dir, "locked-data");
      const first = await startServeProcess(["--port", "0", "--data-dir", data], {
        env: home.env,
      });
      try {
        const second = await runCliProcess(["serve", "--port", "0", "--data-dir", data], {
          env: home.env,
        });
        assert.equal(second.code, 1);
        assert.match(
          second.stderr,
          new RegExp(`Another cursor-byok server \\(pid ${first.child.pid}\\) is using `),
        );
      } finally {
        await first.stop();
      }
    });
  });

  describe("config init", () => {
    test("writes the starter file once and refuses to overwrite it", async () => {
      const file = path.join(home.dir, "init", "config.yaml");
      const first = await runCliProcess(["config", "init", "--config", file], { env: home.env });
      assert.equal(first.code, 0, first.stderr);
      assert.ok(first.stdout.startsWith(`Wrote ${file}.\n`));
      writeFileSync(file, "# my own settings\n");
      const second = await runCliProcess(["config", "init", "--config", file], { env: home.env });
      assert.equal(second.code, 1);
      assert.match(second.stderr, /already exists; not overwriting it/);
      assert.equal(readFileSync(file, "utf8"), "# my own settings\n");
    });
  });

  describe("doctor", () => {
    test("a healthy setup passes (exit 0)", async () => {
      const run = await runCliProcess(["doctor", "--port", "0"], { env: home.env });
      assert.equal(run.code, 0, run.stdout + run.stderr);
      assert.match(run.stdout, /^ok {4}config /m);
      assert.match(run.stdout, /^ok {4}database {2}.*opens and is writable$/m);
      assert.match(run.stdout, /\nAll checks passed\.\n$/);
    });

    test("a broken setup fails (exit 1) and says how to fix it", async () => {
      const file = writeConfig(
        "missing-key.yaml",
        "models:\n  - name: claude\n    api: anthropic\n    model: claude-sonnet-5-5\n    apiKeyEnv: NOT_SET_KEY\n",
      );
      const run = await runCliProcess(["doctor", "--port", "0", "--config", file], {
        env: home.env,
      });
      assert.equal(run.code, 1, run.stdout + run.stderr);
      assert.ok(
        run.stdout.includes(
          `FAIL  key       ${file}:5:16: models[0].apiKeyEnv: environment variable NOT_SET_KEY is not set\n` +
            "                fix: set NOT_SET_KEY in the environment cursor-byok runs in",
        ),
        run.stdout,
      );
      assert.match(run.stdout, /\n1 check failed\.\n$/);
    });

    test("an invalid file fails with its location", async () => {
      const file = writeConfig("bad.yaml", "server:\n  prot: 1\n");
      const run = await runCliProcess(["doctor", "--config", file], { env: home.env });
      assert.equal(run.code, 1);
      assert.match(
        run.stdout,
        new RegExp(`^FAIL  config    ${toRegexSource(file)}:2:3: server.prot: unknown field`, "m"),
      );
    });
  });

  describe("serve", { concurrency: 1 }, () => {
    let server: ServeProcess;
    before(async () => {
      server = await startServeProcess(["--port", "0"], { env: home.env });
    });
    after(() => server.stop());

    test("prints how to point cursor-agent at it", () => {
      assert.match(
        server.output(),
        new RegExp(
          `cursor-agent --endpoint ${toRegexSource(server.url)} --agent-endpoint ${toRegexSource(server.url)}`,
        ),
      );
    });

    test("doctor --e2e runs one agent turn through it (demo model)", async () => {
      const run = await runCliProcess(["doctor", "--e2e", "--url", server.url], { env: home.env });
      assert.equal(run.code, 0, run.stdout + run.stderr);
      assert.match(
        run.stdout,
        /^ok {4}e2e {7}one agent turn over RunSSE \+ BidiAppend at .*model demo: read_file ran in the client, and the answer quotes the file/m,
      );
    });

    test("doctor --e2e fails when no server answers", async () => {
      const run = await runCliProcess(["doctor", "--e2e", "--url", "http://127.0.0.1:1"], {
        env: home.env,
      });
      assert.equal(run.code, 1);
      assert.match(
        run.stdout,
        /^FAIL {2}e2e {7}no cursor-byok server answers at http:\/\/127\.0\.0\.1:1 /m,
      );
    });

    test("SIGTERM shuts it down cleanly", async () => {
      const stopped = await server.stop("SIGTERM");
      assert.equal(stopped.code, 0, server.output());
      assert.match(stopped.stdout, /"msg":"stopped"/);
    });
  });

  describe("access control", () => {
    test("a non-loopback address without an access token is refused at start", async () => {
      const run = await runCliProcess(["serve", "--host", "0.0.0.0", "--port", "0"], {
        env: home.env,
      });
      assert.equal(run.code, 1);
      assert.ok(
        run.stderr.startsWith(
          "cursor-byok: not starting:\n  refusing to listen on 0.0.0.0 without an access token",
        ),
        run.stderr,
      );
    });

    test("a model whose key variable is not set is refused at start", async () => {
      const file = writeConfig(
        "serve-missing-key.yaml",
        "models:\n  - {name: c, api: anthropic, model: m, apiKeyEnv: NOT_SET_KEY}\n",
      );
      const run = await runCliProcess(["serve", "--port", "0", "--config", file], {
        env: home.env,
      });
      assert.equal(run.code, 1);
      assert.equal(
        run.stderr,
        `cursor-byok: not starting:\n  ${file}:2:52: models[0].apiKeyEnv: environment variable NOT_SET_KEY is not set\n` +
          "Run `cursor-byok doctor` to check the whole setup.\n",
      );
    });

    describe("with an access token", { concurrency: 1 }, () => {
      const token = "a-long-random-token-for-tests-0123456789";
      const env = { ...home.env, BYOK_TOKEN: token };
      const file = writeConfig("token.yaml", "server:\n  accessTokenEnv: BYOK_TOKEN\n");
      let server: ServeProcess;
      before(async () => {
        mkdirSync(path.join(home.dir, "token-data"), { recursive: true });
        server = await startServeProcess(
          ["--port", "0", "--config", file, "--data-dir", path.join(home.dir, "token-data")],
          { env },
        );
      });
      after(() => server.stop());

      const getServerConfig = async (headers: Record<string, string>) => {
        const client = createCursorClient({
          baseUrl: server.url,
          httpVersion: "1.1",
          workspace: home.dir,
          headers,
        });
        try {
          await client.ai.getServerConfig({});
          return "ok";
        } catch (error) {
          return ConnectError.from(error).code;
        } finally {
          await client.close();
        }
      };

      test("requests without it or with a wrong one are unauthenticated", async () => {
        assert.equal(await getServerConfig({}), Code.Unauthenticated);
        assert.equal(
          await getServerConfig({ authorization: "Bearer wrong" }),
          Code.Unauthenticated,
        );
        assert.equal(
          await getServerConfig({ authorization: `Bearer ${token}x` }),
          Code.Unauthenticated,
        );
        const raw = await fetch(`${server.url}/aiserver.v1.AiService/GetUsableModels`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
        });
        assert.equal(raw.status, 401);
        assert.equal(((await raw.json()) as { code: string }).code, "unauthenticated");
      });

      test("requests with it are served", async () => {
        assert.equal(await getServerConfig({ authorization: `Bearer ${token}` }), "ok");
      });

      test("doctor --e2e presents the configured token", async () => {
        const run = await runCliProcess(
          ["doctor", "--e2e", "--url", server.url, "--config", file],
          {
            env,
          },
        );
        assert.match(run.stdout, /^ok {4}e2e /m);
        assert.ok(!run.stdout.includes(token) && !server.output().includes(token));
      });
    });
  });
});

function toRegexSource(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
