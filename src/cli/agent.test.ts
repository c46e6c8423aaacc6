/** `cursor-byok agent` against a fake `cursor-agent` on a temporary PATH that records its argv and environment. */
import assert from "node:assert/strict";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { findExecutable, PROXY_VARIABLES, toChildEnv } from "./agent.ts";
import { createTempHome, createTestIO, runCliProcess } from "./testing.ts";

const home = createTempHome();
const bin = path.join(home.dir, "bin");
const record = path.join(home.dir, "record");
let listener: Server;
let url: string;

before(async () => {
  mkdirSync(bin);
  mkdirSync(record);
  // Prints nothing; records one argument per line, then the environment; exits with 7.
  writeFileSync(
    path.join(bin, "cursor-agent"),
    `#!/bin/sh\nfor arg in "$@"; do printf '%s\\n' "$arg"; done > "${record}/argv"\n/usr/bin/env > "${record}/env"\nexit 7\n`,
  );
  chmodSync(path.join(bin, "cursor-agent"), 0o755);
  listener = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const address = listener.address();
  url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`;
});
after(async () => {
  await new Promise((resolve) => listener.close(resolve));
  home.cleanup();
});

const proxies = {
  HTTP_PROXY: "http://proxy:1",
  http_proxy: "http://proxy:2",
  HTTPS_PROXY: "http://proxy:3",
  https_proxy: "http://proxy:4",
  ALL_PROXY: "socks5://proxy:5",
  all_proxy: "socks5://proxy:6",
};

describe("agent", () => {
  test("runs cursor-agent with the endpoint flags and the user's arguments, without proxies", async () => {
    const run = await runCliProcess(
      ["agent", "--url", url, "--", "-p", "hello world", "--model", "claude-sonnet-5-5"],
      { env: { ...home.env, ...proxies, PATH: `${bin}:/usr/bin:/bin`, KEEP_ME: "yes" } },
    );
    assert.equal(run.code, 7, run.stderr);
    assert.deepEqual(readFileSync(path.join(record, "argv"), "utf8").split("\n"), [
      "--endpoint",
      url,
      "--agent-endpoint",
      url,
      "-p",
      "hello world",
      "--model",
      "claude-sonnet-5-5",
      "",
    ]);
    const env = readFileSync(path.join(record, "env"), "utf8");
    assert.match(env, /^KEEP_ME=yes$/m);
    for (const name of Object.keys(proxies)) {
      assert.doesNotMatch(env, new RegExp(`^${name}=`, "m"), name);
    }
  });

  test("without --url it uses the configured host and port", async () => {
    const port = new URL(url).port;
    const file = path.join(home.dir, "agent.yaml");
    writeFileSync(file, `server:\n  host: 127.0.0.1\n  port: ${port}\n`);
    const run = await runCliProcess(["agent", "--config", file], {
      env: { ...home.env, PATH: `${bin}:/usr/bin:/bin` },
    });
    assert.equal(run.code, 7, run.stderr);
    assert.deepEqual(readFileSync(path.join(record, "argv"), "utf8").split("\n").slice(0, 4), [
      "--endpoint",
      `http://127.0.0.1:${port}`,
      "--agent-endpoint",
      `http://127.0.0.1:${port}`,
    ]);
  });

  test("a server with an access token gets a warning: cursor-agent cannot send it", async () => {
    const port = new URL(url).port;
    const file = path.join(home.dir, "agent-token.yaml");
    writeFileSync(file, `server:\n  port: ${port}\n  accessTokenEnv: BYOK_TOKEN\n`);
    const run = await runCliProcess(["agent", "--config", file], {
      env: {
        ...home.env,
        BYOK_TOKEN: "a-long-random-token-for-tests-0123456789",
        PATH: `${bin}:/usr/bin:/bin`,
      },
    });
    assert.equal(run.code, 7);
    assert.ok(
      run.stderr.startsWith(
        "cursor-byok: warning: this server requires an access token, and cursor-agent sends its own\n",
      ),
      run.stderr,
    );
  });

  test("a clear message when cursor-agent is not installed", async () => {
    const run = await runCliProcess(["agent", "--url", url], {
      env: { ...home.env, PATH: path.join(home.dir, "empty") },
    });
    assert.equal(run.code, 127);
    assert.equal(
      run.stderr,
      "cursor-byok: the Cursor CLI is not installed (no cursor-agent or agent on PATH).\n" +
        "Install it with:\n  curl https://cursor.com/install -fsS | bash\n" +
        "then open a new terminal and run this again.\n",
    );
  });

  test("a clear message when no server answers", async () => {
    const run = await runCliProcess(["agent", "--url", "http://127.0.0.1:1"], {
      env: { ...home.env, PATH: `${bin}:/usr/bin:/bin` },
    });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^cursor-byok: no server answers at http:\/\/127\.0\.0\.1:1\.\n/);
  });
});

describe("agent helpers", () => {
  test("cursor-agent is preferred over agent; non-executables are skipped", () => {
    const dirs = ["a", "b"].map((name) => path.join(home.dir, "helpers", name));
    for (const dir of dirs) mkdirSync(dir, { recursive: true });
    const [first = "", second = ""] = dirs;
    writeFileSync(path.join(first, "agent"), "#!/bin/sh\n");
    chmodSync(path.join(first, "agent"), 0o755);
    writeFileSync(path.join(first, "cursor-agent"), "not executable");
    writeFileSync(path.join(second, "cursor-agent"), "#!/bin/sh\n");
    chmodSync(path.join(second, "cursor-agent"), 0o755);
    const io = createTestIO({ home: home.dir, env: { PATH: dirs.join(":") } });
    assert.equal(findExecutable(["cursor-agent", "agent"], io), path.join(second, "cursor-agent"));
    const onlyFirst = createTestIO({ home: home.dir, env: { PATH: first } });
    assert.equal(findExecutable(["cursor-agent", "agent"], onlyFirst), path.join(first, "agent"));
    assert.equal(findExecutable(["nope"], io), undefined);
  });

  test("every proxy variable is removed, in both spellings", () => {
    assert.deepEqual(PROXY_VARIABLES, Object.keys(proxies));
    assert.deepEqual(toChildEnv({ ...proxies, NO_PROXY: "x", PATH: "/bin" }), {
      NO_PROXY: "x",
      PATH: "/bin",
    });
  });
});
