/**
 * The PostgreSQL store against a real server (testing/postgres-server.ts): the store contract
 * and the dashboard contract, the same suites the SQLite and memory stores pass. Skipped, with the
 * reason, when no PostgreSQL is available.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import pg from "pg";
import { hashHistory } from "../loop/history-hash.ts";
import { createConversation } from "../loop/state.ts";
import { userMessage } from "../loop/testing.ts";
import type { Message } from "../loop/types.ts";
import { migratePostgres } from "./postgres-schema.ts";
import { openPostgresStore } from "./postgres-store.ts";
import { runStoreContract } from "./testing/contract.ts";
import { runDashboardContract } from "./testing/dashboard-contract.ts";
import { getTestPostgres } from "./testing/postgres-server.ts";

const postgres = await getTestPostgres();

if (postgres.type === "unavailable") {
  test(`PostgreSQL store: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  const { server } = postgres;
  const open = async (options?: Parameters<typeof openPostgresStore>[0] | object) => {
    const schema = await server.createSchema();
    return {
      store: await openPostgresStore({ ...options, url: schema.url, poolSize: 4 }),
      cleanup: () => schema.drop(),
    };
  };
  runStoreContract("PostgreSQL", open);
  runDashboardContract("PostgreSQL", open);
}

if (postgres.type === "ready") {
  test("two instances racing on one conversation: exactly one commit wins each round", async () => {
    const schema = await postgres.server.createSchema();
    // Two stores with their own pools: two server processes on one database.
    const first = await openPostgresStore({ url: schema.url, poolSize: 2 });
    const second = await openPostgresStore({ url: schema.url, poolSize: 2 });
    try {
      const base = createConversation("raced").committed;
      let messages: Message[] = [];
      for (let round = 0; round < 20; round++) {
        const states = ["first", "second"].map((who) => {
          const next = [...messages, userMessage(`${who} ${round}`)];
          return { ...base, messages: next, hashes: hashHistory(next) };
        });
        const results = await Promise.all(
          [first, second].map((store, i) =>
            store.commitInput({
              inputID: `${i}-${round}`,
              expectedVersion: round,
              state: states[i] as (typeof states)[number],
              result: null,
            }),
          ),
        );
        const winners = results.flatMap((result, i) => (result.type === "committed" ? [i] : []));
        assert.equal(winners.length, 1, `round ${round}: ${results.map((r) => r.type)}`);
        const loser = results.find((result) => result.type !== "committed");
        assert.equal(loser?.type, "conflict");
        messages = (states[winners[0] as number] as (typeof states)[number]).messages;
      }
      const loaded = await second.load("raced");
      assert.equal(loaded?.version, 20);
      assert.equal(loaded?.state.messages.length, 20);
    } finally {
      await first.close();
      await second.close();
      await schema.drop();
    }
  });
}

if (postgres.type === "ready") {
  test("migration 7 moves version-4 request-stream bindings to typed columns", async () => {
    const schema = await postgres.server.createSchema();
    const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        assert.deepEqual(await migratePostgres(client, 6), [1, 2, 3, 4, 5, 6]);
        await client.query("insert into conversations values ('c1', 1, 0, '', '', '{}', 1, 1)");
        const saved = JSON.stringify({
          turnID: "turn-1",
          client: Buffer.from([0, 1, 2, 255]).toString("base64"),
        });
        await client.query("insert into request_streams values ('r1', 'c1', $1, 5)", [saved]);
        await client.query("insert into request_streams values ('r2', 'c1', null, 6)");
        assert.deepEqual(await migratePostgres(client), [7]);
      } finally {
        client.release();
      }
      const store = await openPostgresStore({ url: schema.url, poolSize: 1 });
      try {
        const first = await store.findRequestStream("r1");
        assert.equal(first?.turnID, "turn-1");
        assert.deepEqual([...(first?.clientState ?? [])], [0, 1, 2, 255]);
        const second = await store.findRequestStream("r2");
        assert.deepEqual(
          { turnID: second?.turnID, clientState: second?.clientState, at: second?.createdAt },
          { turnID: null, clientState: null, at: 6 },
        );
      } finally {
        await store.close();
      }
    } finally {
      await pool.end();
      await schema.drop();
    }
  });
}
