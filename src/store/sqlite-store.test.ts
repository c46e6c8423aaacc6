import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, test } from "node:test";
import { toCanonicalJSON } from "../loop/canonical-json.ts";
import { hashHistory, toMessageBytes } from "../loop/history-hash.ts";
import { isStoreError } from "./errors.ts";
import { migrate } from "./schema.ts";
import { createSqliteBackend, NEWEST_CONVERSATION_SQL } from "./sqlite-backend.ts";
import { openSqliteStore } from "./sqlite-store.ts";
import { runStoreContract, toLLMCall } from "./testing/contract.ts";
import { runDashboardContract } from "./testing/dashboard-contract.ts";
import { type ScriptedCommit, toScriptedCommits } from "./testing/scripted-conversation.ts";
import { createTempDirectory } from "./testing/temp-directory.ts";
import { listUnfinished } from "./testing/unfinished.ts";
import type { Store } from "./types.ts";

runDashboardContract("SQLite file", async (options) => {
  const directory = createTempDirectory();
  return {
    store: openSqliteStore({ ...options, path: join(directory.path, "store.db") }),
    async cleanup() {
      directory.remove();
    },
  };
});

runStoreContract("SQLite file", async (options) => {
  const directory = createTempDirectory();
  return {
    store: openSqliteStore({ ...options, path: join(directory.path, "store.db") }),
    async cleanup() {
      directory.remove();
    },
  };
});

const CONVERSATION = "conv-sqlite";

/** Commits the scripted conversation; returns its commits. */
async function commitAll(store: Store): Promise<ScriptedCommit[]> {
  const commits = toScriptedCommits(CONVERSATION);
  for (const [index, commit] of commits.entries()) {
    const records =
      commit.command.type === "call_llm"
        ? [{ type: "llm_call" as const, call: toLLMCall(commit) }]
        : [];
    const result = await store.commitInput({
      inputID: commit.inputID,
      expectedVersion: index,
      state: commit.state,
      result: commit.command,
      records,
    });
    assert.equal(result.type, "committed");
  }
  return commits;
}

describe("SQLite store", () => {
  test("a new file and its new folder are readable by the owner only", {
    skip: process.platform === "win32" ? "POSIX permissions" : false,
  }, async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "new-folder", "cursor-byok.db");
      const store = openSqliteStore({ path });
      await commitAll(store);
      await store.close();
      assert.equal(statSync(path).mode & 0o777, 0o600);
      assert.equal(statSync(join(directory.path, "new-folder")).mode & 0o777, 0o700);
    } finally {
      directory.remove();
    }
  });

  test("the database uses WAL and stores each message's canonical bytes and hashes", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      const store = openSqliteStore({ path });
      const commits = await commitAll(store);
      const messages = commits.at(-1)?.state.messages ?? [];
      const raw = new DatabaseSync(path, { readOnly: true });
      try {
        assert.equal(raw.prepare("pragma journal_mode").get()?.journal_mode, "wal");
        const rows = raw
          .prepare("select seq, json, hash, chain_hash from messages order by seq")
          .all();
        assert.equal(rows.length, messages.length);
        rows.forEach((row, i) => {
          const prefix = hashHistory(messages.slice(0, i + 1));
          assert.deepEqual(
            Buffer.from(String(row.json), "utf8"),
            Buffer.from(toMessageBytes(messages[i] as (typeof messages)[number])),
          );
          assert.equal(row.hash, prefix.lastMessageHash);
          assert.equal(row.chain_hash, prefix.chainHash);
        });
      } finally {
        raw.close();
        await store.close();
      }
    } finally {
      directory.remove();
    }
  });

  test("messages are append-only in the database: UPDATE and DELETE fail", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      const store = openSqliteStore({ path });
      await commitAll(store);
      await store.close();
      const raw = new DatabaseSync(path);
      try {
        const before = raw.prepare("select * from messages order by seq").all();
        assert.throws(
          () => raw.exec("update messages set json = '{}' where seq = 0"),
          /append-only/,
        );
        assert.throws(() => raw.exec("delete from messages where seq = 0"), /append-only/);
        assert.throws(() => raw.exec("delete from messages"), /append-only/);
        assert.throws(() => raw.exec("update llm_calls set request = 'other'"), /never changed/);
        assert.deepEqual(raw.prepare("select * from messages order by seq").all(), before);
      } finally {
        raw.close();
      }
    } finally {
      directory.remove();
    }
  });

  test("a reopened store has everything that was committed", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      const first = openSqliteStore({ path });
      const commits = await commitAll(first);
      const unfinished = await listUnfinished(first);
      await first.close();
      const second = openSqliteStore({ path });
      try {
        const loaded = await second.load(CONVERSATION);
        assert.equal(loaded?.version, commits.length);
        assert.equal(toCanonicalJSON(loaded?.state), toCanonicalJSON(commits.at(-1)?.state));
        assert.deepEqual(await listUnfinished(second), unfinished);
        assert.equal(unfinished.llmCalls.length, 2);
      } finally {
        await second.close();
      }
    } finally {
      directory.remove();
    }
  });

  test("a request stream binding survives a reopen and is never changed in the file", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
      const before = openSqliteStore({ path, now: () => 1234 });
      const result = await before.commitInput({
        inputID: first.inputID,
        expectedVersion: 0,
        state: first.state,
        result: null,
        records: [
          {
            type: "request_stream",
            requestID: "req-1",
            turnID: "turn-1",
            clientState: Uint8Array.of(0, 1, 254, 255),
          },
        ],
      });
      assert.equal(result.type, "committed");
      await before.close();

      const after = openSqliteStore({ path });
      try {
        const bound = {
          conversationID: CONVERSATION,
          turnID: "turn-1",
          clientState: Uint8Array.of(0, 1, 254, 255),
          createdAt: 1234,
        };
        assert.deepEqual(await after.findRequestStream("req-1"), bound);
        const [elsewhere] = toScriptedCommits("conv-elsewhere") as [ScriptedCommit];
        await assert.rejects(
          after.commitInput({
            inputID: elsewhere.inputID,
            expectedVersion: 0,
            state: elsewhere.state,
            result: null,
            records: [{ type: "request_stream", requestID: "req-1" }],
          }),
          (error) => isStoreError(error, "request_bound_elsewhere"),
        );
        const again = await after.commitInput({
          inputID: second.inputID,
          expectedVersion: 1,
          state: second.state,
          result: null,
          records: [{ type: "request_stream", requestID: "req-1" }],
        });
        assert.equal(again.type, "committed");
        assert.deepEqual(await after.findRequestStream("req-1"), bound);
      } finally {
        await after.close();
      }

      const raw = new DatabaseSync(path);
      try {
        assert.throws(
          () =>
            raw
              .prepare("update request_streams set conversation_id = ? where request_id = ?")
              .run("conv-elsewhere", "req-1"),
          /stays bound to its conversation/,
        );
        raw.exec("pragma foreign_keys = on");
        assert.throws(
          () =>
            raw
              .prepare("insert into request_streams values (?, ?, ?, ?, ?)")
              .run("req-2", "conv-missing", null, null, 1),
          /FOREIGN KEY/,
        );
      } finally {
        raw.close();
      }
    } finally {
      directory.remove();
    }
  });

  test("two connections to one file: the version check decides between them", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      const a = openSqliteStore({ path });
      const b = openSqliteStore({ path });
      try {
        const [first, second] = toScriptedCommits(CONVERSATION) as [ScriptedCommit, ScriptedCommit];
        await a.commitInput({
          inputID: first.inputID,
          expectedVersion: 0,
          state: first.state,
          result: 1,
        });
        assert.equal((await b.load(CONVERSATION))?.version, 1);
        const won = await a.commitInput({
          inputID: second.inputID,
          expectedVersion: 1,
          state: second.state,
          result: 2,
        });
        const lost = await b.commitInput({
          inputID: "other",
          expectedVersion: 1,
          state: second.state,
          result: 3,
        });
        assert.equal(won.type, "committed");
        assert.deepEqual(lost, {
          type: "conflict",
          conversationID: CONVERSATION,
          expectedVersion: 1,
          actualVersion: 2,
        });
        const repeated = await b.commitInput({
          inputID: second.inputID,
          expectedVersion: 1,
          state: second.state,
          result: 2,
        });
        assert.equal(repeated.type, "duplicate");
      } finally {
        await a.close();
        await b.close();
      }
    } finally {
      directory.remove();
    }
  });
});

test("the newest conversation by id prefix is a SEARCH of the primary key's range, no SCAN", () => {
  const db = new DatabaseSync(":memory:");
  try {
    migrate(db);
    const plan = db
      .prepare(`explain query plan ${NEWEST_CONVERSATION_SQL}`)
      .all()
      .map((row) => String(row.detail));
    // Sorting by creation is over the range's rows only (a conversation's branches).
    assert.match(
      plan.join("; "),
      /^SEARCH conversations USING INDEX sqlite_autoindex_conversations_1 \(conversation_id>\? AND conversation_id<\?\); USE TEMP B-TREE FOR ORDER BY$/,
    );
  } finally {
    db.close();
  }
});

test("a relaxed write commits without an fsync (synchronous = NORMAL) and puts the connection's setting back, also when it fails", async () => {
  const directory = createTempDirectory();
  const path = join(directory.path, "relaxed.db");
  const db = new DatabaseSync(path);
  try {
    db.exec("pragma journal_mode = wal");
    db.exec("pragma synchronous = full");
    migrate(db);
    const backend = createSqliteBackend(db, path);
    const synchronous = () => Number(db.prepare("pragma synchronous").get()?.synchronous);
    const seen: number[] = [];
    await backend.write(
      async () => {
        seen.push(synchronous());
      },
      { relaxed: true },
    );
    await backend.write(async () => {
      seen.push(synchronous());
    });
    await assert.rejects(
      backend.write(
        async () => {
          seen.push(synchronous());
          throw new Error("refused");
        },
        { relaxed: true },
      ),
      /refused/,
    );
    // NORMAL is 1, FULL 2.
    assert.deepEqual(seen, [1, 2, 1]);
    assert.equal(synchronous(), 2);
  } finally {
    db.close();
    directory.remove();
  }
});

test("a relaxed write whose rollback fails: the caller gets its own error and later commits run at FULL again", async () => {
  const directory = createTempDirectory();
  const path = join(directory.path, "relaxed-leak.db");
  const db = new DatabaseSync(path);
  try {
    db.exec("pragma journal_mode = wal");
    db.exec("pragma synchronous = full");
    migrate(db);
    const backend = createSqliteBackend(db, path);
    const synchronous = () => Number(db.prepare("pragma synchronous").get()?.synchronous);
    // The rollback fails once (as on an I/O error): the transaction is still open when the
    // relaxed write's `finally` runs, where SQLite refuses to change the level.
    const exec = db.exec.bind(db);
    let failRollback = true;
    db.exec = (sql: string) => {
      if (sql === "rollback" && failRollback) {
        failRollback = false;
        throw new Error("disk I/O error (simulated)");
      }
      return exec(sql);
    };
    await assert.rejects(
      backend.write(
        async () => {
          throw new Error("the real failure");
        },
        { relaxed: true },
      ),
      /the real failure/,
    );
    // The next write meets the transaction left open (and rolls it back).
    await backend.write(async () => {}).catch(() => {});
    const seen: number[] = [];
    await backend.write(async () => {
      seen.push(synchronous());
    });
    await backend.write(async () => {}, { relaxed: true });
    await backend.write(async () => {
      seen.push(synchronous());
    });
    // FULL (2), not NORMAL (1): ordinary commits keep their fsync.
    assert.deepEqual(seen, [2, 2]);
    assert.equal(synchronous(), 2);
  } finally {
    db.close();
    directory.remove();
  }
});
