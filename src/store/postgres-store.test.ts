/**
 * The PostgreSQL store against a real server (testing/postgres-server.ts): the store contract
 * and the dashboard contract, the same suites the SQLite and memory stores pass. Skipped, with the
 * reason, when no PostgreSQL is available.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { hashHistory } from "../loop/history-hash.ts";
import { createConversation } from "../loop/state.ts";
import { userMessage } from "../loop/testing.ts";
import type { Message } from "../loop/types.ts";
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
