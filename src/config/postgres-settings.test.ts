/** `data.postgres` and `DATABASE_URL`: the team store's settings (docs/team.md). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigFileError } from "./config-file-error.ts";
import { toConfig } from "./load-config.ts";

const load = (text: string | undefined, env: Record<string, string> = {}) =>
  toConfig(text, {
    location: { path: "/home/me/.config/cursor-byok/config.yaml", namedBy: undefined },
    cwd: "/work",
    env,
    platform: "linux",
    homeDir: "/home/me",
  });

test("without data.postgres or DATABASE_URL the store is the SQLite file", () => {
  assert.equal(load(undefined).postgres, undefined);
});

test("DATABASE_URL selects PostgreSQL; the file's data.postgres.url wins over it", () => {
  const fromEnv = load(undefined, { DATABASE_URL: "postgres://u:pw@db:5432/byok" });
  assert.equal(fromEnv.postgres?.origin, "DATABASE_URL");
  assert.equal(fromEnv.postgres?.url.reveal(), "postgres://u:pw@db:5432/byok");
  const fromFile = load(
    "data:\n  postgres:\n    url: postgresql://a@b/c\n    poolSize: 20\n    statementTimeoutMs: 5000\n",
    { DATABASE_URL: "postgres://u:pw@db:5432/byok" },
  );
  assert.equal(fromFile.postgres?.origin, "data.postgres.url");
  assert.equal(fromFile.postgres?.url.reveal(), "postgresql://a@b/c");
  assert.equal(fromFile.postgres?.poolSize, 20);
  assert.equal(fromFile.postgres?.statementTimeoutMs, 5000);
  // A Secret: printing the configuration never shows the password.
  assert.ok(!JSON.stringify(fromEnv).includes(":pw@"));
});

test("a URL that is not postgres:// and unknown fields are refused, naming the field", () => {
  assert.throws(
    () => load("data:\n  postgres:\n    url: mysql://x/y\n"),
    (error: unknown) =>
      error instanceof ConfigFileError &&
      /data\.postgres\.url must be a postgres/.test(error.message),
  );
  assert.throws(
    () => load("data:\n  postgres:\n    host: db\n"),
    (error: unknown) => error instanceof ConfigFileError && /host/.test(error.message),
  );
  assert.throws(
    () => load("data:\n  postgres: {}\n"),
    (error: unknown) => error instanceof ConfigFileError && /url/.test(error.message),
  );
});
