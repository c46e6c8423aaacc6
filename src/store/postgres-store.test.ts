/**
 * The PostgreSQL store against a real server (testing/postgres-server.ts): the store contract
 * and the dashboard contract, the same suites the SQLite and memory stores pass. Skipped, with the
 * reason, when no PostgreSQL is available.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { test } from "node:test";
import pg from "pg";
import { toCanonicalJSON } from "../loop/canonical-json.ts";
import { hashHistory } from "../loop/history-hash.ts";
import { createConversation } from "../loop/state.ts";
import { userMessage } from "../loop/testing.ts";
import type { Message } from "../loop/types.ts";
import { migratePostgres, POSTGRES_SCHEMA_VERSION } from "./postgres-schema.ts";
import { createPostgresBackend, openPostgresStore } from "./postgres-store.ts";
import { REFUSED_BINDING_UPDATES } from "./testing/binding-updates.ts";
import { imageMessage, runStoreContract, testImage } from "./testing/contract.ts";
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
  test("a binding outside a commit waits for a commit holding the conversation's row, then sees its version", async () => {
    const schema = await postgres.server.createSchema();
    const store = await openPostgresStore({ url: schema.url, poolSize: 2 });
    const other = new pg.Client({ connectionString: schema.url });
    await other.connect();
    try {
      const messages = [userMessage("hi")];
      const state = { ...createConversation("held").committed, messages };
      await store.commitInput({
        inputID: "start",
        expectedVersion: 0,
        state: { ...state, hashes: hashHistory(messages) },
        result: null,
        records: [
          { type: "request_stream", requestID: "req-1", turnID: "t1", clientState: Buffer.of(1) },
        ],
      });
      // Another instance's commit, not yet committed: it holds the row and moves the version on.
      await other.query("begin");
      await other.query("update conversations set version = 2 where conversation_id = 'held'");
      const binding = store.bindRequestStream({
        conversationID: "held",
        requestID: "req-2",
        turnID: "t1",
        clientState: Buffer.of(2),
        expectedVersion: 1,
      });
      let settled = false;
      void binding.then(() => {
        settled = true;
      });
      // The binding must wait for that row (a lock wait), not bind beside the commit.
      for (let waited = 0; ; waited += 1) {
        assert.equal(settled, false, "the binding did not wait for the commit holding the row");
        const waiting = await other.query(
          "select count(*)::int as n from pg_stat_activity " +
            "where wait_event_type = 'Lock' and datname = current_database()",
        );
        if ((waiting.rows[0] as { n: number }).n > 0) break;
        assert.ok(waited < 500, "no lock wait seen");
        await new Promise((resolve) => setImmediate(resolve));
      }
      await other.query("commit");
      assert.deepEqual(await binding, {
        type: "conflict",
        conversationID: "held",
        expectedVersion: 1,
        actualVersion: 2,
      });
      assert.equal(await store.findRequestStream("req-2"), null);
      assert.deepEqual([...((await store.findRequestStream("req-1"))?.clientState ?? [])], [1]);
    } finally {
      await other.end();
      await store.close();
      await schema.drop();
    }
  });

  test("a single-statement read (the turn blob look-up) runs its statement alone, no transaction around it", async () => {
    const schema = await postgres.server.createSchema();
    const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        await migratePostgres(client);
      } finally {
        client.release();
      }
      const statements: string[] = [];
      const connect = pool.connect.bind(pool);
      const spied = new WeakSet<pg.PoolClient>();
      pool.connect = (async () => {
        const pooled = await connect();
        if (!spied.has(pooled)) {
          spied.add(pooled);
          const query = pooled.query.bind(pooled) as (...args: unknown[]) => unknown;
          pooled.query = ((...args: unknown[]) => {
            const [text] = args;
            statements.push(
              typeof text === "string" ? text : String((text as pg.QueryConfig).text),
            );
            return query(...args);
          }) as typeof pooled.query;
        }
        return pooled;
      }) as typeof pool.connect;
      const backend = createPostgresBackend(pool, "test");
      const read = (options?: { single: true }) =>
        backend.read((tables) => tables.readTurnBlob("ab".repeat(32)), options);
      assert.equal(await read({ single: true }), null);
      assert.deepEqual(statements, [
        "select conversation_id, request_id from turn_blobs where blob_id = $1",
      ]);
      statements.length = 0;
      assert.equal(await read(), null);
      assert.equal(statements.length, 3, "a snapshot read: begin, the select, commit");
    } finally {
      await pool.end();
      await schema.drop();
    }
  });

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
        assert.deepEqual(await migratePostgres(client, 7), [7]);
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

  test("a database at version 7 with images stored inline still loads; new rows store them once, also after reopening", async () => {
    const schema = await postgres.server.createSchema();
    const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
    const image = testImage(32 * 1024, 11);
    const first = imageMessage("before the upgrade", image);
    const second = imageMessage("after the upgrade", image);
    const before = hashHistory([first]);
    const oldRequest = JSON.stringify({ contents: [{ parts: [{ inlineData: { data: image } }] }] });
    const newRequest = JSON.stringify({ contents: [{ data: image }, { data: image }] });
    try {
      const client = await pool.connect();
      try {
        assert.deepEqual(await migratePostgres(client, 7), [1, 2, 3, 4, 5, 6, 7]);
        const state = { ...createConversation("c-img").committed, messages: [], hashes: before };
        await client.query("insert into conversations values ('c-img', 1, 1, $1, $2, $3, 1, 1)", [
          before.chainHash,
          before.lastMessageHash,
          JSON.stringify(state),
        ]);
        await client.query("insert into messages values ('c-img', 0, $1, $2, $3)", [
          toCanonicalJSON(first),
          before.lastMessageHash,
          before.chainHash,
        ]);
        await client.query(
          "insert into llm_calls values ('call-old', 'c-img', 't', 'm', $1, $2, $3, 1, $4, 'planned', 1, 1)",
          [oldRequest, sha256(oldRequest), before.chainHash, before.lastMessageHash],
        );
        assert.deepEqual(await migratePostgres(client, 8), [8]);
      } finally {
        client.release();
      }
      const store = await openPostgresStore({ url: schema.url, poolSize: 1 });
      try {
        const loaded = await store.load("c-img");
        assert.ok(loaded !== null);
        assert.equal(toCanonicalJSON(loaded.state.messages), toCanonicalJSON([first]));
        assert.equal((await store.getLLMCall("call-old"))?.request, oldRequest);
        const messages: Message[] = [first, second];
        const after = hashHistory(messages);
        const result = await store.commitInput({
          inputID: "after",
          expectedVersion: 1,
          state: { ...loaded.state, messages, hashes: after },
          result: null,
          records: [
            {
              type: "llm_call",
              call: {
                callID: "call-new",
                conversationID: "c-img",
                turnID: "t",
                model: "m",
                request: newRequest,
                messagesHash: after.chainHash,
                messageCount: 2,
                lastMessageHash: after.lastMessageHash,
                status: "planned",
              },
            },
          ],
        });
        assert.equal(result.type, "committed");
      } finally {
        await store.close();
      }
      const reopened = await openPostgresStore({ url: schema.url, poolSize: 1 });
      try {
        const loaded = await reopened.load("c-img");
        assert.equal(toCanonicalJSON(loaded?.state.messages), toCanonicalJSON([first, second]));
        assert.equal((await reopened.getLLMCall("call-old"))?.request, oldRequest);
        assert.equal((await reopened.getLLMCall("call-new"))?.request, newRequest);
      } finally {
        await reopened.close();
      }
      const holds = async (sql: string): Promise<boolean[]> =>
        (await pool.query<{ t: string }>(sql)).rows.map((row) => row.t.includes(image));
      assert.deepEqual(await holds("select json as t from messages order by seq"), [true, false]);
      assert.deepEqual(await holds("select request as t from llm_calls order by call_id"), [
        false,
        true,
      ]);
      assert.deepEqual(await holds("select data as t from images"), [true]);
    } finally {
      await pool.end();
      await schema.drop();
    }
  });

  test("migration 10 binds every stored stream and conversation (to its user, its root's, or the admin) and holds open reservations from their creation", async () => {
    const schema = await postgres.server.createSchema();
    const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        assert.deepEqual(await migratePostgres(client, 9), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        await client.query("insert into users values ('u-ann', 'ann', 'hash-a', 1, null)");
        for (const id of ["c-ann", "c-ann~task~0123", "c-admin", "c-admin~task~4567"]) {
          await client.query("insert into conversations values ($1, 1, 0, '', '', '{}', 5, 5)", [
            id,
          ]);
        }
        await client.query("insert into conversation_users values ('c-ann', 'u-ann', 1)");
        await client.query(
          "insert into request_streams (request_id, conversation_id, created_at) values " +
            "('r-ann', 'c-ann', 2), ('r-admin', 'c-admin', 3)",
        );
        await client.query(
          "insert into user_calls (call_id, user_id, conversation_id, day, reserved_tokens, " +
            "reserved_cost, created_at) values ('open', 'u-ann', 'c-ann', '2026-11-30', 10, 0, 7)",
        );
        assert.deepEqual(await migratePostgres(client, 10), [10]);
        const conversations = await client.query(
          "select conversation_id, user_id from conversation_users order by conversation_id",
        );
        assert.deepEqual(conversations.rows, [
          { conversation_id: "c-admin", user_id: null },
          { conversation_id: "c-admin~task~4567", user_id: null },
          { conversation_id: "c-ann", user_id: "u-ann" },
          { conversation_id: "c-ann~task~0123", user_id: "u-ann" },
        ]);
        const streams = await client.query(
          "select request_id, user_id from stream_users order by request_id",
        );
        assert.deepEqual(streams.rows, [
          { request_id: "r-admin", user_id: null },
          { request_id: "r-ann", user_id: "u-ann" },
        ]);
        const held = await client.query("select held_at::int from user_calls");
        assert.deepEqual(held.rows, [{ held_at: 7 }]);
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
      await schema.drop();
    }
  });

  test("migration 11 releases the saved state of streams bound to an earlier turn, and lets a binding's saved state be released and nothing else change", async () => {
    const schema = await postgres.server.createSchema();
    const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        assert.deepEqual(await migratePostgres(client, 10), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        // c1's current turn is t1; c2's state cannot be read.
        await client.query(
          `insert into conversations values ('c1', 1, 0, '', '', '{"turnID":"t1"}', 1, 1)`,
        );
        await client.query(
          "insert into conversations values ('c2', 1, 0, '', '', 'not json', 1, 1)",
        );
        const bytes = Buffer.from([0, 1, 2, 255]);
        const insert = (id: string, conversation: string, turn: string | null, at: number) =>
          client.query("insert into request_streams values ($1, $2, $3, $4, $5)", [
            id,
            conversation,
            turn,
            bytes,
            at,
          ]);
        await insert("r-earlier", "c1", "t0", 5);
        await insert("r-current", "c1", "t1", 6);
        await insert("r-no-turn", "c1", null, 4);
        await insert("r-unreadable", "c2", "t0", 3);
        const refused = (sql: string, params: unknown[] = []) =>
          assert.rejects(client.query(sql, params), /stays bound to its conversation/, sql);
        // Before: no update at all.
        await refused(
          "update request_streams set client_state = null where request_id = 'r-current'",
        );
        assert.deepEqual(await migratePostgres(client, 11), [11]);
        const rows = async () =>
          (
            await client.query(
              "select request_id, conversation_id, turn_id, client_state, created_at::int " +
                "from request_streams order by request_id",
            )
          ).rows;
        const row = (
          request_id: string,
          conversation_id: string,
          turn_id: string | null,
          client_state: Buffer | null,
          created_at: number,
        ) => ({ request_id, conversation_id, turn_id, client_state, created_at });
        assert.deepEqual(await rows(), [
          row("r-current", "c1", "t1", bytes, 6),
          row("r-earlier", "c1", "t0", null, 5),
          row("r-no-turn", "c1", null, bytes, 4),
          row("r-unreadable", "c2", "t0", bytes, 3),
        ]);

        await client.query(
          "update request_streams set client_state = null where request_id = 'r-no-turn'",
        );
        for (const id of ["r-earlier", "r-current"]) {
          await refused(`update request_streams set client_state = $1 where request_id = '${id}'`, [
            Buffer.from([7]),
          ]);
        }
        for (const sql of [
          ...REFUSED_BINDING_UPDATES,
          "delete from request_streams where request_id = 'r-earlier'",
          "truncate request_streams cascade",
        ]) {
          await refused(sql);
        }
        assert.deepEqual(await rows(), [
          row("r-current", "c1", "t1", bytes, 6),
          row("r-earlier", "c1", "t0", null, 5),
          row("r-no-turn", "c1", null, null, 4),
          row("r-unreadable", "c2", "t0", bytes, 3),
        ]);
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
      await schema.drop();
    }
  });

  test("migration 12 adds the turn blobs to a database at version 11, which keeps its data", async () => {
    const schema = await postgres.server.createSchema();
    const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        assert.deepEqual(await migratePostgres(client, 11), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
        await client.query(
          `insert into conversations values ('c1', 1, 0, '', '', '{"turnID":"t1"}', 1, 1)`,
        );
        assert.deepEqual(await migratePostgres(client), [12]);
        const kept = await client.query(
          "select version from conversations where conversation_id = 'c1'",
        );
        assert.equal(Number(kept.rows[0]?.version), 1);
        await assert.rejects(
          client.query(
            "insert into turn_blobs (blob_id, conversation_id, request_id) values ($1, 'c1', 'r')",
            [Buffer.alloc(31)],
          ),
          /turn_blobs_blob_id_check/,
        );
      } finally {
        client.release();
      }
      const store = await openPostgresStore({ url: schema.url, poolSize: 1 });
      try {
        const blob = { blobID: "cd".repeat(32), conversationID: "c1", requestID: "r1" };
        await store.recordTurnBlobs([blob]);
        assert.deepEqual(await store.findTurnBlob(blob.blobID), blob);
      } finally {
        await store.close();
      }
    } finally {
      await pool.end();
      await schema.drop();
    }
  });

  test("every migration runs for a role without the TEMP privilege (hardened databases take it from application roles)", async (t) => {
    const suffix = randomBytes(4).toString("hex");
    const database = `notemp_${suffix}`;
    const role = `app_${suffix}`;
    const admin = new pg.Client({ connectionString: postgres.server.url });
    await admin.connect();
    try {
      const may = await admin.query(
        "select rolcreatedb and rolcreaterole as may from pg_roles where rolname = current_user",
      );
      if (may.rows[0]?.may !== true) {
        t.skip("the test database's role may not create a database and a role");
        return;
      }
      await admin.query(`create database ${database}`);
      await admin.query(`create role ${role} login password 'x'`);
      await admin.query(`revoke temporary on database ${database} from public`);
      await admin.query(`grant create, connect on database ${database} to ${role}`);
      const url = new URL(postgres.server.url);
      url.pathname = `/${database}`;
      const owner = new pg.Client({ connectionString: url.toString() });
      await owner.connect();
      await owner.query(`create schema app authorization ${role}`);
      await owner.end();
      url.username = role;
      url.password = "x";
      url.searchParams.set("options", "-c search_path=app");
      const client = new pg.Client({ connectionString: url.toString() });
      await client.connect();
      try {
        await assert.rejects(client.query("create temporary table t (x int)"), /permission denied/);
        const all = await migratePostgres(client as unknown as pg.PoolClient);
        assert.deepEqual(all.at(-1), POSTGRES_SCHEMA_VERSION);
      } finally {
        await client.end();
      }
    } finally {
      await admin.query(`drop database if exists ${database}`).catch(() => {});
      await admin.query(`drop role if exists ${role}`).catch(() => {});
      await admin.end();
    }
  });

  test("migration 9 starts the users' ledger from their committed usage and unbinds helper pseudo-conversations", async () => {
    const schema = await postgres.server.createSchema();
    const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
    try {
      const client = await pool.connect();
      try {
        assert.deepEqual(await migratePostgres(client, 8), [1, 2, 3, 4, 5, 6, 7, 8]);
        await client.query("insert into users values ('u-ann', 'ann', 'hash-a', 1, null)");
        await client.query("insert into conversations values ('c1', 1, 0, '', '', '{}', 1, 1)");
        await client.query(
          "insert into conversation_users values ('c1', 'u-ann', 1), " +
            "('cursor-byok-helper-title', 'u-ann', 2)",
        );
        const usage = "'p', 'm', '2026-11-30'";
        await client.query(
          `insert into call_usage values ('c1', 1, 'call-1', ${usage}, 100, 50, 10, 5, 0.25, 7), ` +
            `('c1', 3, null, ${usage}, 1, 2, 0, 0, 0, 8)`,
        );
        assert.deepEqual(await migratePostgres(client, 9), [9]);
        const ledger = await client.query(
          "select call_id, user_id, conversation_id, day, reserved_tokens::int, tokens::int, cost, settled_at::int " +
            "from user_calls order by call_id",
        );
        assert.deepEqual(ledger.rows, [
          {
            call_id: "call-1",
            user_id: "u-ann",
            conversation_id: "c1",
            day: "2026-11-30",
            reserved_tokens: 0,
            tokens: 165,
            cost: 0.25,
            settled_at: 7,
          },
          {
            call_id: "committed:c1:3",
            user_id: "u-ann",
            conversation_id: "c1",
            day: "2026-11-30",
            reserved_tokens: 0,
            tokens: 3,
            cost: 0,
            settled_at: 8,
          },
        ]);
        const bound = await client.query("select conversation_id from conversation_users");
        assert.deepEqual(bound.rows, [{ conversation_id: "c1" }]);
        await assert.rejects(
          client.query("insert into user_keys values ('u-ann', 'openai', 'sk-not-a-name!')"),
          /check constraint/,
          "only a variable's name fits",
        );
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
      await schema.drop();
    }
  });
}

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}
