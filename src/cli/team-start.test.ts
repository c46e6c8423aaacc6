/** `serve` refuses team configurations that cannot work safely (docs/team.md). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type Config, toConfig } from "../config/index.ts";
import { toStartProblems } from "./serve.ts";

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
