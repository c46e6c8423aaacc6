/**
 * `cursor-byok users keys` and `users list` (docs/team.md): a user's own key is recorded as the
 * name of an environment variable, never its value; the list shows whether that variable is set
 * (in the shell running the command) and each user's usage, used and reserved. Needs a real
 * PostgreSQL; skipped, with the reason, without one.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { openPostgresStore } from "../store/postgres-store.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import { createTempHome, createTestIO, type TempHome } from "./testing.ts";
import { UsageError } from "./usage-error.ts";
import { USERS_COMMAND } from "./users.ts";

const postgres = await getTestPostgres();
const ANN_KEY = "sk-ann-0123456789abcdef";

if (postgres.type === "unavailable") {
  test(`users CLI: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  describe("cursor-byok users keys / list", { concurrency: 1 }, () => {
    let home: TempHome;
    let url: string;
    let drop: () => Promise<void>;
    let file: string;
    before(async () => {
      home = createTempHome();
      // The server's configuration: one model whose provider id is openai, its key in a variable
      // named like a user's (so only the configuration tells it is the server's).
      file = path.join(home.dir, "team.yaml");
      writeFileSync(
        file,
        [
          "models:",
          "  - name: team-gpt",
          "    api: openai-chat",
          "    provider: openai",
          "    model: gpt-test",
          "    baseUrl: http://127.0.0.1:9/v1",
          "    apiKeyEnv: CURSOR_BYOK_USER_TEAM_OPENAI",
          "",
        ].join("\n"),
      );
      const schema = await postgres.server.createSchema();
      url = schema.url;
      drop = schema.drop;
      await (await openPostgresStore({ url, poolSize: 1 })).close();
    });
    after(async () => {
      home.cleanup();
      await drop();
    });

    const run = async (args: string[], extraEnv: Record<string, string> = {}) => {
      const io = createTestIO({
        home: home.dir,
        env: { ...home.env, DATABASE_URL: url, ...extraEnv },
      });
      const code = await USERS_COMMAND.run([...args, "--config", file], io);
      return { code, out: io.out(), err: io.err() };
    };

    test("keys records a variable's name; list shows set/unset here and used vs reserved, never a key", async () => {
      assert.equal((await run(["add", "ann"])).code, 0);
      assert.equal((await run(["add", "bob"])).code, 0);
      const set = await run(
        ["keys", "ann", "--provider", "openai", "--env", "CURSOR_BYOK_USER_ANN_OPENAI"],
        {
          CURSOR_BYOK_USER_ANN_OPENAI: ANN_KEY,
        },
      );
      assert.equal(set.code, 0, set.err);
      assert.match(
        set.out,
        /ann: their own openai key, read by each server instance from \$CURSOR_BYOK_USER_ANN_OPENAI/,
      );
      await assert.rejects(
        run(["keys", "ann", "--provider", "openai", "--env", ANN_KEY]),
        (error: unknown) =>
          error instanceof UsageError && /never the key itself/.test(error.message),
      );
      assert.equal(
        (await run(["keys", "nobody", "--provider", "openai", "--env", "CURSOR_BYOK_USER_X"])).code,
        1,
      );

      // 150 tokens used, one call in progress holding 1,010, one orphaned long ago.
      const users = openPostgresUsers({ url });
      try {
        const ann = (await users.list(Date.now())).find((user) => user.name === "ann");
        const call = { userID: ann?.userID as string, conversationID: "c" };
        await users.settle({ ...call, callID: "done", tokens: 150, cost: 0.5 }, Date.now());
        const held = { ...call, callID: "running", tokens: 1010, cost: 0.25 };
        assert.deepEqual(await users.reserve(held, Date.now()), { type: "ok" });
        // A reservation whose instance died mid-call is held 5 minutes after its last sign of
        // life (store/users.ts RESERVATION_LIFETIME_MS), no longer.
        const stale = { ...call, callID: "orphaned", tokens: 5000, cost: 5 };
        assert.deepEqual(await users.reserve(stale, Date.now() - 31 * 60_000), { type: "ok" });
      } finally {
        await users.close();
      }

      const withKey = await run(["list"], { CURSOR_BYOK_USER_ANN_OPENAI: ANN_KEY });
      assert.match(
        withKey.out,
        /ann\s+active\s+openai: \$CURSOR_BYOK_USER_ANN_OPENAI \(set here\)/,
      );
      assert.match(withKey.out, /150 tok, \$0\.50 \(\+1,010 tok, \$0\.25 reserved\)/);
      assert.match(withKey.out, /bob\s+active\s+team's\s+0 tok, \$0\.00\s/);
      const without = await run(["list"]);
      assert.match(without.out, /openai: \$CURSOR_BYOK_USER_ANN_OPENAI \(unset here\)/);
      const json = await run(["list", "--json"], { CURSOR_BYOK_USER_ANN_OPENAI: ANN_KEY });
      const listed = JSON.parse(json.out) as { name: string; keys: unknown; today: unknown }[];
      assert.deepEqual(listed[0]?.keys, [
        { provider: "openai", env: "CURSOR_BYOK_USER_ANN_OPENAI" },
      ]);
      assert.deepEqual(listed[0]?.today, {
        tokens: 150,
        cost: 0.5,
        reservedTokens: 1010,
        reservedCost: 0.25,
      });
      for (const output of [set, withKey, without, json]) {
        assert.ok(!`${output.out}${output.err}`.includes(ANN_KEY), "no key is ever printed");
      }

      assert.equal((await run(["keys", "ann", "--provider", "openai", "--none"])).code, 0);
      assert.match((await run(["list"])).out, /ann\s+active\s+team's/);
    });

    test("keys refuses a variable that could be one of the server's secrets, and a provider no model has (L3)", async () => {
      for (const variable of [
        "CURSOR_BYOK_TOKEN",
        "DATABASE_URL",
        "PGPASSWORD",
        "OPENAI_API_KEY",
      ]) {
        await assert.rejects(
          run(["keys", "bob", "--provider", "openai", "--env", variable]),
          (error: unknown) =>
            error instanceof UsageError &&
            /must name a variable starting with CURSOR_BYOK_USER_/.test(error.message),
          variable,
        );
      }
      const serverOwn = await run([
        "keys",
        "bob",
        ...["--provider", "openai", "--env", "CURSOR_BYOK_USER_TEAM_OPENAI"],
      ]);
      assert.equal(serverOwn.code, 1);
      assert.match(
        serverOwn.err,
        /CURSOR_BYOK_USER_TEAM_OPENAI is one of the server's own variables/,
      );
      const gemini = await run([
        "keys",
        "bob",
        "--provider",
        "gemini",
        "--env",
        "CURSOR_BYOK_USER_B",
      ]);
      assert.equal(gemini.code, 1);
      assert.match(
        gemini.err,
        /no configured model has the provider id gemini \(the models' provider ids: openai\)/,
      );
      assert.match((await run(["list"])).out, /bob\s+active\s+team's/, "nothing was recorded");

      // The store refuses such names too (a caller other than the CLI), and a name recorded before
      // (or written to the database directly) is flagged by list.
      const users = openPostgresUsers({ url });
      try {
        await assert.rejects(users.setKey("bob", "openai", "DATABASE_URL"), /CURSOR_BYOK_USER_/);
        const pool = new pg.Pool({ connectionString: url, max: 1 });
        await pool.query(
          "insert into user_keys select user_id, 'openai', 'PGPASSWORD' from users where name = 'bob'",
        );
        await pool.end();
      } finally {
        await users.close();
      }
      assert.match(
        (await run(["list"])).out,
        /openai: \$PGPASSWORD \(unset here; not a user key variable: their calls are refused\)/,
      );
    });
  });
}
