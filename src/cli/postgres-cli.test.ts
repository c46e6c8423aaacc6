/**
 * The team store from the command line (docs/team.md): `db migrate` on a PostgreSQL database,
 * and a server configured with `DATABASE_URL` keeping a whole agent turn there. Needs a real
 * PostgreSQL (store/testing/postgres-server.ts); skipped, with the reason, without one.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { POSTGRES_SCHEMA_VERSION } from "../store/postgres-schema.ts";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import {
  createTempHome,
  runCliProcess,
  type ServeProcess,
  startServeProcess,
  type TempHome,
} from "./testing.ts";

const postgres = await getTestPostgres();
const PASSWORD = "not-a-real-password-1f3a";

if (postgres.type === "unavailable") {
  test(`PostgreSQL CLI: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  const { server } = postgres;
  describe("cursor-byok on PostgreSQL", { concurrency: 1 }, () => {
    let home: TempHome;
    let url: string;
    let drop: () => Promise<void>;
    before(async () => {
      home = createTempHome();
      const schema = await server.createSchema();
      drop = schema.drop;
      // The throw-away cluster trusts local connections: any password is accepted, and none
      // may be shown.
      url = schema.url.replace("postgres://postgres@", `postgres://postgres:${PASSWORD}@`);
    });
    after(async () => {
      home.cleanup();
      await drop();
    });

    test("doctor checks the PostgreSQL database, not the SQLite file", async () => {
      const env = { ...home.env, DATABASE_URL: url };
      const before = await runCliProcess(["doctor"], { env });
      assert.match(
        before.stdout,
        /^ok {4}database +postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\S* answers; its schema is older/m,
        before.stdout + before.stderr,
      );
      const broken = await runCliProcess(["doctor"], {
        env: { ...env, DATABASE_URL: url.replace(/:(\d+)\//, ":1/") },
      });
      assert.match(broken.stdout, /^FAIL +database /m, broken.stdout + broken.stderr);
      assert.match(broken.stdout, /data\.postgres\.url \(or DATABASE_URL\)/);
      for (const run of [before, broken]) {
        assert.ok(!`${run.stdout}${run.stderr}`.includes(PASSWORD));
        assert.ok(!`${run.stdout}`.includes(".db"), "no SQLite file is checked");
      }
    });

    test("db migrate applies the schema once, then has nothing to do", async () => {
      const env = { ...home.env, DATABASE_URL: url };
      const first = await runCliProcess(["db", "migrate"], { env });
      assert.equal(first.code, 0, first.stderr);
      const all = Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1).join(", ");
      assert.ok(
        first.stdout.includes(
          `applied migrations ${all}; now at schema ${POSTGRES_SCHEMA_VERSION}`,
        ),
        first.stdout,
      );
      const again = await runCliProcess(["db", "migrate"], { env });
      assert.equal(again.code, 0, again.stderr);
      assert.ok(
        again.stdout.includes(`is at schema ${POSTGRES_SCHEMA_VERSION}; nothing to do`),
        again.stdout,
      );
      const doctor = await runCliProcess(["doctor"], { env });
      assert.match(doctor.stdout, /^ok {4}database +\S+ answers; its schema is current$/m);
      assert.ok(!`${first.stdout}${first.stderr}${again.stdout}`.includes(PASSWORD));
    });

    describe("serve with DATABASE_URL", () => {
      let serve: ServeProcess;
      before(async () => {
        serve = await startServeProcess(["--port", "0"], {
          env: { ...home.env, DATABASE_URL: url },
        });
      });
      after(() => serve.stop());

      test("names the database without its password and keeps a turn there", async () => {
        assert.match(serve.output(), /database: postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres/);
        const run = await runCliProcess(["doctor", "--e2e", "--url", serve.url], {
          env: home.env,
        });
        assert.match(run.stdout, /^ok {4}e2e /m, run.stdout + run.stderr);
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          const counts = await client.query(
            "select (select count(*) from conversations)::int as conversations, " +
              "(select count(*) from messages)::int as messages, " +
              "(select count(*) from llm_calls where status = 'committed')::int as calls",
          );
          const row = counts.rows[0] as { conversations: number; messages: number; calls: number };
          assert.equal(row.conversations, 1);
          assert.ok(row.messages >= 3, `${row.messages} messages`);
          assert.ok(row.calls >= 1);
        } finally {
          await client.end();
        }
        assert.ok(!serve.output().includes(PASSWORD));
      });
    });
  });
}
