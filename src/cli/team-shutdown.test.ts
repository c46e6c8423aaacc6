/**
 * Shutdown of an instance on PostgreSQL is bounded from the signal (docs/team.md "Shutdown"):
 * when the database stalls while the instance gives its streams up, it stops waiting for that
 * and exits well within the bound, instead of waiting out a statement time-out first and only
 * then starting the bound. Needs a real PostgreSQL (store/testing/postgres-server.ts).
 */
import assert from "node:assert/strict";
import { performance } from "node:perf_hooks";
import { test } from "node:test";
import pg from "pg";
import { getTestPostgres } from "../store/testing/postgres-server.ts";
import { createTempHome, startServeProcess } from "./testing.ts";

const postgres = await getTestPostgres();

if (postgres.type === "unavailable") {
  test(`team shutdown: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  test("SIGTERM with the instances table locked: the instance stops in well under 15 s", async () => {
    const home = createTempHome();
    const schema = await postgres.server.createSchema();
    const locker = new pg.Client({ connectionString: schema.url });
    try {
      const serve = await startServeProcess(["--port", "0"], {
        env: { ...home.env, DATABASE_URL: schema.url },
      });
      await locker.connect();
      // Every heartbeat and the hand-over of this instance's streams now wait on the lock.
      await locker.query("begin");
      await locker.query("lock table instances in access exclusive mode");
      const signalled = performance.now();
      const result = await serve.stop("SIGTERM");
      const elapsed = performance.now() - signalled;
      assert.equal(result.code, 0, serve.output());
      assert.ok(elapsed < 10_000, `stopped after ${Math.round(elapsed)} ms`);
      assert.match(serve.output(), /could not give this instance's streams up/);
    } finally {
      await locker.query("rollback").catch(() => undefined);
      await locker.end().catch(() => undefined);
      await schema.drop();
      home.cleanup();
    }
  });
}
