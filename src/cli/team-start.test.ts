/** `serve` refuses team configurations that cannot work safely (docs/team.md). */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { type Config, toConfig } from "../config/index.ts";
import { JOURNAL_VERSION, toIdeDirectory, writeJournal } from "../ide/journal.ts";
import { toIdeModeProblem, toStartProblems } from "./serve.ts";
import { createTempHome, runCliProcess } from "./testing.ts";

const FILE = "/home/me/.config/cursor-byok/config.yaml";
const ENV = { DATABASE_URL: "postgres://u@db:5432/byok", ADMIN_TOKEN: "a".repeat(40) };

function load(server: string): Config {
  return toConfig(`server:\n${server}`, {
    location: { path: FILE, namedBy: undefined },
    cwd: "/work",
    env: ENV,
    platform: "linux",
    homeDir: "/home/me",
  });
}

const advertiseProblems = (config: Config) =>
  toStartProblems(config).filter((problem) => problem.includes("server.advertiseUrl"));

test("PostgreSQL beyond loopback without server.advertiseUrl does not start, naming the setting", () => {
  const config = load("  host: 0.0.0.0\n  accessTokenEnv: ADMIN_TOKEN\n");
  const [problem, ...rest] = advertiseProblems(config);
  assert.equal(rest.length, 0);
  assert.match(
    problem ?? "",
    /^server\.advertiseUrl is not set, and the server listens on 0\.0\.0\.0/,
  );
});

test("a loopback server.advertiseUrl beyond loopback is refused too", () => {
  for (const url of ["http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765"]) {
    const config = load(`  host: 0.0.0.0\n  accessTokenEnv: ADMIN_TOKEN\n  advertiseUrl: ${url}\n`);
    assert.match(advertiseProblems(config)[0] ?? "", /a loopback address/, url);
  }
});

test("a private advertiseUrl, or a loopback listener, starts", () => {
  const advertised = load(
    "  host: 0.0.0.0\n  accessTokenEnv: ADMIN_TOKEN\n  advertiseUrl: http://10.0.0.5:8765\n",
  );
  assert.deepEqual(toStartProblems(advertised), []);
  assert.deepEqual(toStartProblems(load("  host: 127.0.0.1\n")), []);
});

test("a team's server (server.users) never runs the IDE proxy, which would serve as the admin", () => {
  const users = load("  users: true\n  accessTokenEnv: ADMIN_TOKEN\n");
  assert.deepEqual(toStartProblems(users), []);
  assert.match(toIdeModeProblem(users, true) ?? "", /this is a team's server \(server\.users\)/);
  assert.equal(toIdeModeProblem(users, false), undefined);
  assert.equal(toIdeModeProblem(load("  host: 127.0.0.1\n"), true), undefined);
});

test("serve with server.users and an IDE set-up does not start, and says why", async () => {
  const home = createTempHome();
  try {
    const ideDirectory = toIdeDirectory(path.join(home.dir, "data", "cursor-byok"));
    mkdirSync(ideDirectory, { recursive: true, mode: 0o700 });
    writeJournal(ideDirectory, {
      version: JOURNAL_VERSION,
      createdAt: new Date().toISOString(),
      proxyUrl: "http://127.0.0.1:1",
      ca: { certFile: path.join(ideDirectory, "ca.pem"), sha256: "", sha1: "", serial: "" },
      trust: [],
    });
    mkdirSync(path.dirname(home.configPath), { recursive: true });
    writeFileSync(
      home.configPath,
      "server:\n  users: true\n  accessTokenEnv: ADMIN_TOKEN\n" +
        "models:\n  - name: m\n    api: openai-chat\n    model: m\n    apiKeyEnv: TEST_KEY\n",
    );
    // Refused before the database is opened: this address is never connected to.
    const run = await runCliProcess(["serve", "--port", "0"], {
      env: {
        ...home.env,
        ...ENV,
        TEST_KEY: "sk-test",
        DATABASE_URL: "postgres://u@127.0.0.1:1/none",
      },
    });
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /not starting: IDE mode is set up, and this is a team's server/);
  } finally {
    home.cleanup();
  }
});
