import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, test } from "node:test";
import { toCanonicalJSON } from "../loop/canonical-json.ts";
import { hashHistory } from "../loop/history-hash.ts";
import { T0, text } from "../loop/testing.ts";
import type { Message } from "../loop/types.ts";
import { toStateJSON } from "./history.ts";
import { createMemoryStore } from "./memory-store.ts";
import { APPLICATION_ID, MIGRATIONS, migrate, SCHEMA_VERSION } from "./schema.ts";
import { openSqliteStore } from "./sqlite-store.ts";
import { REFUSED_BINDING_UPDATES } from "./testing/binding-updates.ts";
import { imageMessage, testImage, toLLMCall } from "./testing/contract.ts";
import { answer, driveTurn } from "./testing/dashboard-contract.ts";
import { type ScriptedCommit, toScriptedCommits } from "./testing/scripted-conversation.ts";
import { createTempDirectory } from "./testing/temp-directory.ts";
import type { LLMCallInput, Store } from "./types.ts";

const CONVERSATION = "conv-schema";

/** The schema objects of a file, comparable across files. */
function readSchema(path: string): unknown[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db
      .prepare("select type, name, tbl_name, sql from sqlite_schema order by type, name")
      .all()
      .map((row) => ({ ...row }));
  } finally {
    db.close();
  }
}

function readPragma(path: string, name: string): unknown {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return db.prepare(`pragma ${name}`).get()?.[name];
  } finally {
    db.close();
  }
}

/**
 * Writes the first two commits of the scripted conversation as schema version 1 laid them out
 * (conversations, messages and input_commits have not changed since).
 */
function seedVersion1(db: DatabaseSync, commits: readonly ScriptedCommit[], from = 0): void {
  commits.forEach((commit, index) => {
    if (index < from) return;
    const { state } = commit;
    if (index === 0) {
      db.prepare("insert into conversations values (?, 1, ?, ?, ?, ?, 10, 10)").run(
        CONVERSATION,
        state.messages.length,
        state.hashes.chainHash,
        state.hashes.lastMessageHash,
        toStateJSON(state, toCanonicalJSON),
      );
    } else {
      db.prepare(
        "update conversations set version = ?, message_count = ?, chain_hash = ?, " +
          "last_message_hash = ?, state_json = ? where conversation_id = ?",
      ).run(
        index + 1,
        state.messages.length,
        state.hashes.chainHash,
        state.hashes.lastMessageHash,
        toStateJSON(state, toCanonicalJSON),
        CONVERSATION,
      );
    }
    const stored = index === 0 ? 0 : (commits[index - 1] as ScriptedCommit).state.messages.length;
    for (let seq = stored; seq < state.messages.length; seq += 1) {
      const prefix = hashHistory(state.messages.slice(0, seq + 1));
      db.prepare("insert into messages values (?, ?, ?, ?, ?)").run(
        CONVERSATION,
        seq,
        toCanonicalJSON(state.messages[seq]),
        prefix.lastMessageHash,
        prefix.chainHash,
      );
    }
    db.prepare("insert into input_commits values (?, ?, ?, ?, ?, ?, 10)").run(
      CONVERSATION,
      commit.inputID,
      index + 1,
      state.messages.length,
      state.hashes.chainHash,
      toCanonicalJSON(commit.command),
    );
  });
}

/** A model call as any schema version since 2 stores it. */
function seedCall(db: DatabaseSync, call: LLMCallInput): void {
  db.prepare("insert into llm_calls values (?, ?, ?, ?, ?, ?, ?, ?, ?, 'planned', 10, 10)").run(
    call.callID,
    call.conversationID,
    call.turnID,
    call.model,
    call.request,
    createHash("sha256").update(call.request, "utf8").digest("hex"),
    call.messagesHash,
    call.messageCount,
    call.lastMessageHash,
  );
}

/** Adds what schema version 2 added: a model call of the first commit, with a diagnostic. */
function seedVersion2(db: DatabaseSync, commit: ScriptedCommit, version: number): LLMCallInput {
  const call = toLLMCall(commit);
  db.prepare("insert into llm_calls values (?, ?, ?, ?, ?, ?, ?, ?, ?, 'planned', 10, 10)").run(
    call.callID,
    call.conversationID,
    call.turnID,
    call.model,
    call.request,
    createHash("sha256").update(call.request, "utf8").digest("hex"),
    call.messagesHash,
    call.messageCount,
    call.lastMessageHash,
  );
  // Migration 5 dropped the stream diagnostics.
  if (version < 5) {
    db.prepare(
      "insert into stream_diagnostics (call_id, at, kind, detail_json) values (?, 11, 'retry', ?)",
    ).run(call.callID, '{"attempt":1}');
  }
  return call;
}

/** Every byte value, as a version-4 runner saved a client state: base64 inside JSON text. */
const SAVED_BYTES = Uint8Array.from({ length: 256 }, (_, index) => index);

/**
 * Adds request-stream bindings as schema versions 3 and 4 kept them: one JSON text holding the
 * turn and the base64 client state, or no text, or a text that is not that JSON.
 */
function seedVersion3(db: DatabaseSync, version: number): void {
  if (version >= 5) {
    // Typed columns since migration 5: the bindings as that migration leaves them.
    const insert = db.prepare("insert into request_streams values (?, ?, ?, ?, 12)");
    insert.run("req-saved", CONVERSATION, "t1", SAVED_BYTES);
    // Migration 7 released the state of a stream bound to an earlier turn.
    insert.run("req-earlier", CONVERSATION, "t0", version >= 7 ? null : SAVED_BYTES);
    insert.run("req-no-client", CONVERSATION, "turn-b", null);
    insert.run("req-nothing", CONVERSATION, null, null);
    insert.run("req-other-text", CONVERSATION, null, null);
    return;
  }
  const insert = db.prepare("insert into request_streams values (?, ?, ?, 12)");
  const json = (turnID: string) =>
    JSON.stringify({ turnID, client: Buffer.from(SAVED_BYTES).toString("base64") });
  insert.run("req-saved", CONVERSATION, json("t1"));
  insert.run("req-earlier", CONVERSATION, json("t0"));
  insert.run("req-no-client", CONVERSATION, JSON.stringify({ turnID: "turn-b", client: null }));
  insert.run("req-nothing", CONVERSATION, null);
  insert.run("req-other-text", CONVERSATION, "opened-by:run-request");
}

/** The dashboard's figures of a store, without the store-clock times. */
async function toFigures(store: Store): Promise<unknown> {
  const page = await store.listConversations();
  return {
    conversations: page.items.map(({ createdAt, updatedAt, ...rest }) => rest),
    usage: await store.listUsage(),
  };
}

async function commitToMemory(commits: readonly ScriptedCommit[]): Promise<Store> {
  const store = createMemoryStore();
  for (const [version, commit] of commits.entries()) {
    await store.commitInput({
      inputID: commit.inputID,
      expectedVersion: version,
      state: commit.state,
      result: null,
    });
  }
  return store;
}

describe("schema migrations", () => {
  test("migrations are numbered 1, 2, … without gaps", () => {
    assert.deepEqual(
      MIGRATIONS.map((migration) => migration.version),
      MIGRATIONS.map((_, i) => i + 1),
    );
    assert.equal(SCHEMA_VERSION, MIGRATIONS.length);
  });

  test("an empty file is created at the latest version and marked as ours", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "new.db");
      await openSqliteStore({ path }).close();
      assert.equal(readPragma(path, "user_version"), SCHEMA_VERSION);
      assert.equal(readPragma(path, "application_id"), APPLICATION_ID);
      const reopened = openSqliteStore({ path });
      await reopened.close();
      assert.equal(readPragma(path, "user_version"), SCHEMA_VERSION);
    } finally {
      directory.remove();
    }
  });

  test("a process older than the dashboard that commits to an upgraded file leaves no lasting gap in the figures", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "shared.db");
      const commits = toScriptedCommits(CONVERSATION);
      const store = openSqliteStore({ path });
      await store.commitInput({
        inputID: commits[0]?.inputID ?? "",
        expectedVersion: 0,
        state: (commits[0] as ScriptedCommit).state,
        result: null,
      });
      await store.close();
      // A schema-3 build writes conversations, messages and input commits only.
      const db = new DatabaseSync(path);
      seedVersion1(db, commits.slice(0, 3), 1);
      db.close();
      const reopened = openSqliteStore({ path });
      try {
        for (const [i, commit] of commits.slice(3).entries()) {
          const result = await reopened.commitInput({
            inputID: commit.inputID,
            expectedVersion: 3 + i,
            state: commit.state,
            result: null,
          });
          assert.equal(result.type, "committed");
        }
        assert.deepEqual(await toFigures(reopened), await toFigures(await commitToMemory(commits)));
      } finally {
        await reopened.close();
      }
    } finally {
      directory.remove();
    }
  });

  test("migration 4 derives what live commits derive: title from the first user text, Unicode search, odd timestamps", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "live.db");
      const options = { path, now: () => T0 + 7 };
      const live = openSqliteStore(options);
      // A first message without text, then a title led by newlines, in mixed case beyond ASCII.
      await driveTurn(live, "c-title", "\n\n", [answer([text("?")], { input: 1, output: 1 }, 0)]);
      await driveTurn(live, "c-title", "\n  Été à ZÜRICH\n\tsecond line", [
        answer([text("ok")], { input: 2, output: 3, cost: 0.5 }, T0 + 86_400_000),
      ]);
      const expected = await toFigures(live);
      assert.equal((await live.listConversations()).items[0]?.title, "Été à ZÜRICH second line");
      assert.equal((await live.listConversations({ search: "zürich" })).total, 1);
      await live.close();

      // The same history in a file at schema version 3 (its tables have not changed since).
      const old = join(directory.path, "old.db");
      const db = new DatabaseSync(old);
      migrate(db, 3);
      db.exec(`attach database '${path}' as live`);
      for (const table of [
        "conversations",
        "messages",
        "input_commits",
        "llm_calls",
        "client_operations",
      ]) {
        db.exec(`insert into main.${table} select * from live.${table}`);
      }
      db.exec("detach database live");
      db.close();

      const upgraded = openSqliteStore({ ...options, path: old });
      try {
        assert.deepEqual(await toFigures(upgraded), expected);
        assert.equal((await upgraded.listConversations({ search: "zürich" })).total, 1);
        assert.equal((await upgraded.listConversations({ search: "été à" })).total, 1);
      } finally {
        await upgraded.close();
      }
    } finally {
      directory.remove();
    }
  });

  test("a file at version 5 with images stored inline still loads, and new rows store them once", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "images.db");
      const image = testImage(32 * 1024, 9);
      const [base] = toScriptedCommits(CONVERSATION) as [ScriptedCommit];
      const first = imageMessage("before the upgrade", image);
      const old: ScriptedCommit = {
        ...base,
        state: { ...base.state, messages: [first], hashes: hashHistory([first]) },
      };
      const db = new DatabaseSync(path);
      migrate(db, 5);
      seedVersion1(db, [old]);
      const oldCall: LLMCallInput = {
        ...toLLMCall(base),
        request: JSON.stringify({ messages: [{ content: [{ type: "image", data: image }] }] }),
        messagesHash: old.state.hashes.chainHash,
      };
      seedCall(db, oldCall);
      db.close();

      const second = imageMessage("after the upgrade", image);
      const messages: Message[] = [first, second];
      const newCall: LLMCallInput = {
        ...oldCall,
        callID: `${oldCall.callID}-after`,
        request: JSON.stringify({ messages: [{ data: image }, { data: image }] }),
      };
      const store = openSqliteStore({ path });
      try {
        const loaded = await store.load(CONVERSATION);
        assert.equal(toCanonicalJSON(loaded?.state.messages), toCanonicalJSON([first]));
        assert.equal((await store.getLLMCall(oldCall.callID))?.request, oldCall.request);
        const result = await store.commitInput({
          inputID: "after",
          expectedVersion: 1,
          state: { ...old.state, messages, hashes: hashHistory(messages) },
          result: null,
          records: [{ type: "llm_call", call: newCall }],
        });
        assert.equal(result.type, "committed");
      } finally {
        await store.close();
      }

      const reopened = openSqliteStore({ path });
      try {
        const loaded = await reopened.load(CONVERSATION);
        assert.equal(toCanonicalJSON(loaded?.state.messages), toCanonicalJSON(messages));
        assert.deepEqual(loaded?.state.hashes, hashHistory(messages));
        for (const call of [oldCall, newCall]) {
          assert.equal((await reopened.getLLMCall(call.callID))?.request, call.request);
        }
      } finally {
        await reopened.close();
      }
      // Rows written before keep the image inline (append-only); new ones refer to it.
      const raw = new DatabaseSync(path, { readOnly: true });
      try {
        const holds = (sql: string): boolean[] =>
          raw
            .prepare(sql)
            .all()
            .map((row) => String(Object.values(row)[0]).includes(image));
        assert.deepEqual(holds("select json from messages order by seq"), [true, false]);
        assert.deepEqual(holds("select request from llm_calls order by created_at, call_id"), [
          true,
          false,
        ]);
        assert.deepEqual(holds("select data from images"), [true]);
      } finally {
        raw.close();
      }
    } finally {
      directory.remove();
    }
  });

  test("migration 7 releases the saved state of streams bound to an earlier turn, and lets a binding's saved state be released and nothing else change", () => {
    const directory = createTempDirectory();
    try {
      const db = new DatabaseSync(join(directory.path, "release.db"));
      try {
        migrate(db, 6);
        // The conversation's current turn is t1.
        seedVersion1(db, toScriptedCommits(CONVERSATION).slice(0, 1));
        db.prepare("insert into conversations values ('c2', 1, 0, '', '', 'not json', 1, 1)").run();
        const insert = db.prepare("insert into request_streams values (?, ?, ?, ?, ?)");
        insert.run("r-earlier", CONVERSATION, "t0", SAVED_BYTES, 5);
        insert.run("r-current", CONVERSATION, "t1", SAVED_BYTES, 6);
        insert.run("r-no-turn", CONVERSATION, null, SAVED_BYTES, 4);
        insert.run("r-unreadable", "c2", "t0", SAVED_BYTES, 3);
        const refused = (sql: string, ...params: (Uint8Array | null)[]) =>
          assert.throws(
            () => db.prepare(sql).run(...params),
            /stays bound to its conversation/,
            sql,
          );
        refused("update request_streams set client_state = null where request_id = 'r-current'");
        migrate(db, 7);
        // The release (sqlite-backend.ts) reads only the rows still holding a state.
        const plan = db
          .prepare(
            "explain query plan update request_streams set client_state = null " +
              "where conversation_id = ? and request_id <> ? and client_state is not null",
          )
          .all()
          .map((step) => String(step.detail));
        assert.ok(
          plan.some((detail) => detail.includes("USING INDEX request_streams_saved")),
          plan.join("; "),
        );
        const rows = () =>
          db
            .prepare("select * from request_streams order by request_id")
            .all()
            .map((row) => ({ ...row }));
        const row = (
          request_id: string,
          conversation_id: string,
          turn_id: string | null,
          client_state: Uint8Array | null,
          created_at: number,
        ) => ({ request_id, conversation_id, turn_id, client_state, created_at });
        assert.deepEqual(rows(), [
          row("r-current", CONVERSATION, "t1", SAVED_BYTES, 6),
          row("r-earlier", CONVERSATION, "t0", null, 5),
          row("r-no-turn", CONVERSATION, null, SAVED_BYTES, 4),
          row("r-unreadable", "c2", "t0", SAVED_BYTES, 3),
        ]);

        db.prepare(
          "update request_streams set client_state = null where request_id = 'r-no-turn'",
        ).run();
        refused(
          "update request_streams set client_state = ? where request_id = 'r-earlier'",
          SAVED_BYTES,
        );
        refused(
          "update request_streams set client_state = ? where request_id = 'r-current'",
          Uint8Array.of(7),
        );
        for (const sql of REFUSED_BINDING_UPDATES) {
          refused(sql);
        }
        assert.deepEqual(rows(), [
          row("r-current", CONVERSATION, "t1", SAVED_BYTES, 6),
          row("r-earlier", CONVERSATION, "t0", null, 5),
          row("r-no-turn", CONVERSATION, null, null, 4),
          row("r-unreadable", "c2", "t0", SAVED_BYTES, 3),
        ]);
      } finally {
        db.close();
      }
    } finally {
      directory.remove();
    }
  });

  for (let version = 0; version < SCHEMA_VERSION; version += 1) {
    test(`a file at version ${version} is upgraded, keeps its data and has the latest schema`, async () => {
      const directory = createTempDirectory();
      try {
        const fresh = join(directory.path, "fresh.db");
        await openSqliteStore({ path: fresh }).close();

        const old = join(directory.path, "old.db");
        const commits = toScriptedCommits(CONVERSATION);
        const db = new DatabaseSync(old);
        migrate(db, version);
        if (version >= 1) seedVersion1(db, commits.slice(0, 2));
        const call = version >= 2 ? seedVersion2(db, commits[0] as ScriptedCommit, version) : null;
        if (version >= 3) seedVersion3(db, version);
        db.close();
        assert.equal(readPragma(old, "user_version"), version);

        const store = openSqliteStore({ path: old });
        try {
          if (version >= 1) {
            const loaded = await store.load(CONVERSATION);
            assert.equal(loaded?.version, 2);
            assert.equal(toCanonicalJSON(loaded?.state), toCanonicalJSON(commits[1]?.state));
            const previous = await store.findInputCommit(CONVERSATION, commits[0]?.inputID ?? "");
            assert.deepEqual(previous?.result, JSON.parse(toCanonicalJSON(commits[0]?.command)));
          }
          if (call !== null) {
            assert.equal((await store.getLLMCall(call.callID))?.request, call.request);
          }
          if (version >= 3) {
            // Migration 5 moved each binding's turn and client state into typed columns.
            const bound = (turnID: string | null, clientState: Uint8Array | null) => ({
              conversationID: CONVERSATION,
              turnID,
              clientState,
              createdAt: 12,
            });
            // The conversation's current turn is t1: migration 7 released the state of a stream
            // bound to an earlier turn.
            assert.deepEqual(await store.findRequestStream("req-saved"), bound("t1", SAVED_BYTES));
            assert.deepEqual(await store.findRequestStream("req-earlier"), bound("t0", null));
            assert.deepEqual(await store.findRequestStream("req-no-client"), bound("turn-b", null));
            assert.deepEqual(await store.findRequestStream("req-nothing"), bound(null, null));
            assert.deepEqual(await store.findRequestStream("req-other-text"), bound(null, null));
          }
          // The upgraded file takes new commits.
          const base = version >= 1 ? 2 : 0;
          for (const [i, commit] of commits.slice(base).entries()) {
            const result = await store.commitInput({
              inputID: commit.inputID,
              expectedVersion: base + i,
              state: commit.state,
              result: null,
              records: i === 0 ? [{ type: "request_stream", requestID: "req-upgraded" }] : [],
            });
            assert.equal(result.type, "committed");
          }
          assert.equal(
            (await store.findRequestStream("req-upgraded"))?.conversationID,
            CONVERSATION,
          );
          // Migration 8's turn blobs: recorded and found on every upgraded file.
          const turnBlob = {
            blobID: "ab".repeat(32),
            conversationID: CONVERSATION,
            requestID: "r",
          };
          await store.recordTurnBlobs([turnBlob]);
          assert.deepEqual(await store.findTurnBlob(turnBlob.blobID), turnBlob);
          // Dashboard figures backfilled by migration 4 and kept since equal those of a store
          // that saw every commit.
          assert.deepEqual(await toFigures(store), await toFigures(await commitToMemory(commits)));
        } finally {
          await store.close();
        }
        assert.deepEqual(readSchema(old), readSchema(fresh));
        assert.equal(readPragma(old, "user_version"), SCHEMA_VERSION);
        assert.equal(readPragma(old, "application_id"), APPLICATION_ID);
      } finally {
        directory.remove();
      }
    });
  }
});
