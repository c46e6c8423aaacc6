/**
 * The PostgreSQL users (postgres-users.ts) against a real server (testing/postgres-server.ts):
 * bindings under concurrency and the ledger's settlement. Skipped, with the reason, when no
 * PostgreSQL is available.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { openPostgresStore } from "./postgres-store.ts";
import {
  LEDGER_KEPT_MONTHS,
  openPostgresUsers,
  STREAM_OWNER_KEPT_MS,
  toLedgerKeptFrom,
} from "./postgres-users.ts";
import { getTestPostgres } from "./testing/postgres-server.ts";
import { type ScriptedCommit, toScriptedCommits } from "./testing/scripted-conversation.ts";

const postgres = await getTestPostgres();

test("a timed pruning that fails is reported (for the log), not swallowed", {
  timeout: 10_000,
}, async () => {
  // Nothing listens on port 1: the pruning's query fails to connect.
  let told!: (error: unknown) => void;
  const failed = new Promise<unknown>((resolve) => {
    told = resolve;
  });
  const users = openPostgresUsers({
    url: "postgres://nobody@127.0.0.1:1/none",
    pruneFirstMs: 0,
    onPruneFailure: told,
  });
  try {
    const error = await failed;
    assert.match(String(error instanceof Error ? error.message : error), /127\.0\.0\.1|connect/i);
  } finally {
    await users.close();
  }
});

if (postgres.type === "unavailable") {
  test(`PostgreSQL users: skipped, ${postgres.reason}`, { skip: postgres.reason }, () => {});
} else {
  const { server } = postgres;
  /** A migrated schema and two independent `Users` on it (as two instances have). */
  const open = async () => {
    const schema = await server.createSchema();
    await (await openPostgresStore({ url: schema.url, poolSize: 2 })).close();
    const a = openPostgresUsers({ url: schema.url, poolSize: 4, prune: false });
    const b = openPostgresUsers({ url: schema.url, poolSize: 4, prune: false });
    return {
      a,
      b,
      url: schema.url,
      cleanup: async () => {
        await a.close();
        await b.close();
        await schema.drop();
      },
    };
  };

  test("two users binding one new id at once: exactly one is told it is theirs (M1)", async () => {
    const { a, b, cleanup } = await open();
    try {
      const ann = (await a.add("ann")).user.userID;
      const bob = (await a.add("bob")).user.userID;
      let both = 0;
      let neither = 0;
      const rounds = 300;
      for (let i = 0; i < rounds; i++) {
        const id = randomUUID();
        const bind = i % 2 === 0 ? "bindStream" : "bindConversation";
        const [ra, rb] = await Promise.all([
          a[bind](id, ann, Date.now()),
          b[bind](id, bob, Date.now()),
        ]);
        if (ra === ann && rb === bob) both++;
        if (ra !== rb) neither++;
      }
      assert.equal(both, 0, `${both} of ${rounds} ids were handed to both users`);
      assert.equal(neither, 0, "both answers name the one committed owner");
    } finally {
      await cleanup();
    }
  });

  test("a replay's settlement never overwrites the call's, and a settlement written twice counts once (L4)", async () => {
    const { a, cleanup } = await open();
    try {
      const ann = (await a.add("ann")).user.userID;
      const now = Date.now();
      const call = { callID: "call-1", userID: ann, conversationID: "c" };
      assert.deepEqual(await a.reserve({ ...call, tokens: 1000, cost: 1 }, now), { type: "ok" });
      await a.settle({ ...call, tokens: 150, cost: 0.15 }, now);
      // The call was sent again after a takeover: a second provider call, counted too.
      await a.settle({ ...call, tokens: 200, cost: 0.2, replayID: "r1" }, now);
      // Each written again (a retry after a lost answer): no change.
      await a.settle({ ...call, tokens: 200, cost: 0.2, replayID: "r1" }, now);
      await a.settle({ ...call, tokens: 150, cost: 0.15 }, now);
      const [listed] = await a.list(now);
      assert.equal(listed?.today.tokens, 350);
      assert.ok(Math.abs((listed?.today.cost ?? 0) - 0.35) < 1e-9);
      assert.equal(listed?.today.reservedTokens, 0);
    } finally {
      await cleanup();
    }
  });

  test("a reservation is held while its call shows signs of life, and lapses a lifetime after the last (L4)", async () => {
    const { a, cleanup } = await open();
    try {
      const ann = (await a.add("ann")).user.userID;
      const t0 = Date.UTC(2026, 10, 30, 9, 0);
      const minute = 60_000;
      const call = { userID: ann, conversationID: "c", tokens: 1000, cost: 0 };
      await a.reserve({ ...call, callID: "long" }, t0);
      await a.reserve({ ...call, callID: "abandoned" }, t0);
      // The long call runs for 40 minutes, marking its reservation every minute.
      for (let at = t0 + minute; at <= t0 + 40 * minute; at += minute) await a.hold("long", at);
      const reserved = async (at: number) =>
        (await a.list(at)).find((user) => user.userID === ann)?.today.reservedTokens;
      assert.equal(await reserved(t0 + 4 * minute), 2000, "both held within the lifetime");
      assert.equal(await reserved(t0 + 40 * minute), 1000, "the running call's only");
      assert.equal(await reserved(t0 + 44 * minute), 1000, "4 minutes after its last sign");
      assert.equal(await reserved(t0 + 46 * minute), 0, "lapsed: its instance is gone");
      // A settled call is not held again by a late sign of life.
      await a.settle({ ...call, callID: "long", tokens: 900 }, t0 + 41 * minute);
      await a.hold("long", t0 + 42 * minute);
      assert.equal(await reserved(t0 + 42 * minute), 0);
    } finally {
      await cleanup();
    }
  });

  test("a revoked user is admitted to no new call, budget or not (L4)", async () => {
    const { a, b, cleanup } = await open();
    try {
      const ann = (await a.add("ann")).user.userID;
      assert.equal(await b.isActive(ann), true);
      assert.ok(await a.revoke("ann", Date.now()));
      assert.equal(await b.isActive(ann), false);
      assert.equal(await b.isActive("nobody"), false);
      const verdict = await b.reserve(
        { callID: "c1", userID: ann, conversationID: "c", tokens: 10, cost: 0 },
        Date.now(),
      );
      assert.equal(verdict.type, "revoked");
      const [listed] = await a.list(Date.now());
      assert.equal(listed?.today.reservedTokens, 0, "nothing reserved");
    } finally {
      await cleanup();
    }
  });

  test("retention: old stream owners and ledger rows are deleted, what is still read is kept", async () => {
    const { a, url, cleanup } = await open();
    const store = await openPostgresStore({ url, poolSize: 2 });
    try {
      const ann = (await a.add("ann")).user.userID;
      const now = Date.UTC(2026, 11, 1, 2, 0); // 1 December 2026
      const day = 24 * 60 * 60 * 1000;
      const old = now - STREAM_OWNER_KEPT_MS - day;
      // Three streams bound long ago: one still restorable (its request keeps a saved run
      // request), one released by a later turn's binding, one never bound to a conversation.
      const [first] = toScriptedCommits("retained") as [ScriptedCommit];
      await store.commitInput({
        inputID: first.inputID,
        expectedVersion: 0,
        state: first.state,
        result: first.command,
        records: [
          {
            type: "request_stream",
            requestID: "released",
            turnID: first.state.turnID,
            clientState: new Uint8Array([1]),
          },
        ],
      });
      await store.bindRequestStream({
        conversationID: "retained",
        requestID: "restorable",
        turnID: first.state.turnID,
        clientState: new Uint8Array([2]),
        expectedVersion: 1,
      });
      for (const id of ["restorable", "released", "unbound"]) await a.bindStream(id, ann, old);
      await a.bindStream("recent", ann, now - day);
      // Ledger rows: before the kept months, on their first day, this month (one unsettled).
      assert.equal(toLedgerKeptFrom(now), "2026-10-01");
      assert.equal(LEDGER_KEPT_MONTHS, 3);
      const call = { userID: ann, conversationID: "retained", tokens: 10, cost: 0 };
      await a.settle({ ...call, callID: "september" }, Date.UTC(2026, 8, 30, 23, 0));
      await a.settle({ ...call, callID: "october" }, Date.UTC(2026, 9, 1, 0, 0));
      await a.reserve({ ...call, callID: "open-now" }, now);
      await a.settle({ ...call, callID: "settled-now" }, now);

      assert.deepEqual(await a.prune(now), { streamOwners: 2, ledgerRows: 1 });
      // Kept: the restorable stream's owner (another user is still refused) and the recent one.
      const bob = (await a.add("bob")).user.userID;
      assert.equal(await a.bindStream("restorable", bob, now), ann);
      assert.equal(await a.bindStream("recent", bob, now), ann);
      // Forgotten: a released stream's id goes to whoever names it (it gets `stream_released`).
      assert.equal(await a.bindStream("released", bob, now), bob);
      // This month's usage is whole: one settled call and one reservation.
      const [listed] = (await a.list(now)).filter((user) => user.userID === ann);
      assert.deepEqual([listed?.month.tokens, listed?.month.reservedTokens], [10, 10]);
      assert.deepEqual(await a.prune(now), { streamOwners: 0, ledgerRows: 0 }, "idempotent");
    } finally {
      await store.close();
      await cleanup();
    }
  });
}
