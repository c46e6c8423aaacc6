/**
 * Files the store must refuse, and writes that cannot happen: each gives a `StoreError` that names
 * the file and says what to do, and loses nothing that was committed.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  mkdirSync,
  readFileSync,
  renameSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { toCanonicalJSON } from "../loop/canonical-json.ts";
import { hashHistory } from "../loop/history-hash.ts";
import { userMessage } from "../loop/testing.ts";
import { isStoreError, type StoreErrorCode } from "./errors.ts";
import { SCHEMA_VERSION } from "./schema.ts";
import { openSqliteStore } from "./sqlite-store.ts";
import { type ScriptedCommit, toScriptedCommits } from "./testing/scripted-conversation.ts";
import { createTempDirectory } from "./testing/temp-directory.ts";
import type { Store } from "./types.ts";

const PROBE = fileURLToPath(new URL("./testing/read-only-probe.ts", import.meta.url));
const SOURCES = fileURLToPath(new URL("..", import.meta.url));

/**
 * The command that runs the probe. As root it runs as the unprivileged "nobody", who may not be
 * able to enter this checkout (e.g. a clone in root's home or in a `mktemp -d` directory) nor
 * run the node binary inside it: it then runs copies of both, in `directory`, which anyone can
 * read.
 */
function probeCommand(directory: string, asRoot: boolean): { node: string; probe: string } {
  if (!asRoot) return { node: process.execPath, probe: PROBE };
  const copy = join(directory, "probe");
  mkdirSync(copy);
  cpSync(SOURCES, join(copy, "src"), { recursive: true });
  writeFileSync(join(copy, "package.json"), '{ "type": "module" }\n');
  copyFileSync(process.execPath, join(copy, "node"));
  for (const path of [copy, join(copy, "src"), join(copy, "src", "store")]) chmodSync(path, 0o755);
  chmodSync(join(copy, "node"), 0o755);
  return {
    node: join(copy, "node"),
    probe: join(copy, "src", "store", "testing", "read-only-probe.ts"),
  };
}

function assertStoreError(error: unknown, code: StoreErrorCode, path: string): true {
  assert.ok(isStoreError(error, code), `expected StoreError ${code}, got ${String(error)}`);
  assert.ok(error.message.includes(path), `the message names ${path}: ${error.message}`);
  assert.equal(error.location, path);
  return true;
}

/** Commits the scripted conversation `conversationID` up to `count` commits. */
async function commitScript(
  store: Store,
  conversationID: string,
  count = 4,
): Promise<ScriptedCommit[]> {
  const commits = toScriptedCommits(conversationID).slice(0, count);
  for (const [index, commit] of commits.entries()) {
    const result = await store.commitInput({
      inputID: commit.inputID,
      expectedVersion: index,
      state: commit.state,
      result: commit.command,
    });
    assert.equal(result.type, "committed");
  }
  return commits;
}

/** A closed database file holding one finished conversation. */
async function createDatabase(path: string, conversationID = "conv-1"): Promise<ScriptedCommit[]> {
  const store = openSqliteStore({ path });
  try {
    return await commitScript(store, conversationID);
  } finally {
    await store.close();
  }
}

describe("bad files and failed writes", () => {
  test("a file that is not a database is refused and left unchanged", () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "notes.db");
      writeFileSync(path, "These are my notes, not a database.\n".repeat(200));
      const before = readFileSync(path);
      assert.throws(
        () => openSqliteStore({ path }),
        (error) => {
          assertStoreError(error, "corrupt_database", path);
          assert.match((error as Error).message, /Move it aside/);
          return true;
        },
      );
      assert.deepEqual(readFileSync(path), before);
    } finally {
      directory.remove();
    }
  });

  test("another program's database is refused and left unchanged", () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "state.vscdb");
      const other = new DatabaseSync(path);
      other.exec("create table ItemTable (key text unique on conflict replace, value blob)");
      other.prepare("insert into ItemTable values (?, ?)").run("k", "v");
      other.close();
      const before = readFileSync(path);
      assert.throws(
        () => openSqliteStore({ path }),
        (error) => {
          assertStoreError(error, "foreign_database", path);
          assert.match((error as Error).message, /another program/);
          return true;
        },
      );
      assert.deepEqual(readFileSync(path), before);
    } finally {
      directory.remove();
    }
  });

  test("a database from a newer cursor-byok is refused and left unchanged", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      const commits = await createDatabase(path);
      const raw = new DatabaseSync(path);
      raw.exec(`pragma user_version = ${SCHEMA_VERSION + 1}`);
      raw.close();
      const before = readFileSync(path);
      assert.throws(
        () => openSqliteStore({ path }),
        (error) => {
          assertStoreError(error, "newer_schema", path);
          assert.match((error as Error).message, /Upgrade cursor-byok/);
          assert.match((error as Error).message, new RegExp(`version ${SCHEMA_VERSION + 1}`));
          return true;
        },
      );
      assert.deepEqual(readFileSync(path), before);
      // Nothing was lost: back at the known version, everything is there.
      const restore = new DatabaseSync(path);
      restore.exec(`pragma user_version = ${SCHEMA_VERSION}`);
      restore.close();
      const store = openSqliteStore({ path });
      assert.equal((await store.load("conv-1"))?.version, commits.length);
      await store.close();
    } finally {
      directory.remove();
    }
  });

  test("a damaged message is reported on load; other conversations still load", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      await createDatabase(path, "conv-damaged");
      // Change one letter of the stored message inside the file ("sum" → "sun").
      const bytes = readFileSync(path);
      const needle = Buffer.from("the sum of two numbers");
      let damaged = 0;
      for (let at = bytes.indexOf(needle); at >= 0; at = bytes.indexOf(needle, at + 1)) {
        bytes[at + "the su".length] = "n".charCodeAt(0);
        damaged += 1;
      }
      assert.ok(damaged > 0);
      writeFileSync(path, bytes);
      await createDatabase(path, "conv-intact");
      const before = readFileSync(path);

      const store = openSqliteStore({ path });
      try {
        await assert.rejects(store.load("conv-damaged"), (error) => {
          assertStoreError(error, "corrupt_database", path);
          assert.match((error as Error).message, /conv-damaged/);
          assert.match((error as Error).message, /restore it from a backup/);
          return true;
        });
        assert.equal((await store.load("conv-intact"))?.version, 4);
      } finally {
        await store.close();
      }
      assert.deepEqual(readFileSync(path), before);
    } finally {
      directory.remove();
    }
  });

  test("a file cut short is reported as damaged", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      await createDatabase(path);
      truncateSync(path, 4096 * 3);
      const attempt = async (): Promise<void> => {
        const store = openSqliteStore({ path });
        try {
          await store.load("conv-1");
        } finally {
          await store.close();
        }
      };
      await assert.rejects(attempt(), (error) => assertStoreError(error, "corrupt_database", path));
    } finally {
      directory.remove();
    }
  });

  test("a full disk fails the commit and keeps everything committed before", async () => {
    const directory = createTempDirectory();
    try {
      const path = join(directory.path, "store.db");
      const commits = await createDatabase(path);
      const last = commits.at(-1) as ScriptedCommit;
      const raw = new DatabaseSync(path, { readOnly: true });
      const pages = Number(raw.prepare("pragma page_count").get()?.page_count);
      raw.close();

      const big = userMessage("x".repeat(256 * 1024));
      const messages = [...last.state.messages, big];
      const next = { ...last.state, messages, hashes: hashHistory(messages) };
      const full = openSqliteStore({ path, maxPageCount: pages + 1 });
      try {
        await assert.rejects(
          full.commitInput({ inputID: "big", expectedVersion: 4, state: next, result: null }),
          (error) => {
            assertStoreError(error, "disk_full", path);
            assert.match((error as Error).message, /Free some space/);
            return true;
          },
        );
        // The failed commit left the store usable and unchanged.
        const loaded = await full.load("conv-1");
        assert.equal(loaded?.version, 4);
        assert.equal(toCanonicalJSON(loaded?.state), toCanonicalJSON(last.state));
      } finally {
        await full.close();
      }

      const roomy = openSqliteStore({ path });
      try {
        assert.equal(await roomy.findInputCommit("conv-1", "big"), null);
        const retried = await roomy.commitInput({
          inputID: "big",
          expectedVersion: 4,
          state: next,
          result: null,
        });
        assert.equal(retried.type, "committed");
      } finally {
        await roomy.close();
      }
    } finally {
      directory.remove();
    }
  });

  test("a read-only file is refused with what to do, and keeps its data", {
    skip: process.platform === "win32" ? "POSIX permissions" : false,
  }, async () => {
    const directory = createTempDirectory();
    try {
      const folder = join(directory.path, "data");
      mkdirSync(folder);
      const path = join(folder, "store.db");
      const commits = await createDatabase(path);
      const before = readFileSync(path);
      // Root ignores permission bits, so as root the probe runs as the unprivileged "nobody".
      const asRoot = process.getuid?.() === 0;
      chmodSync(directory.path, 0o755);
      chmodSync(folder, 0o755);
      chmodSync(path, asRoot ? 0o644 : 0o444);
      const { node, probe } = probeCommand(directory.path, asRoot);
      const { stdout } = await promisify(execFile)(node, [probe, path], {
        timeout: 20_000,
        ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
      });
      const outcome = JSON.parse(stdout) as { opened: boolean; code?: string; message?: string };
      assert.equal(outcome.opened, false);
      assert.equal(outcome.code, "read_only");
      assert.ok(outcome.message?.includes(path));
      assert.match(outcome.message ?? "", /chmod u\+w/);
      chmodSync(path, 0o600);
      assert.deepEqual(readFileSync(path), before);
      const store = openSqliteStore({ path });
      assert.equal((await store.load("conv-1"))?.version, commits.length);
      await store.close();
    } finally {
      directory.remove();
    }
  });

  for (const what of ["deleted", "replaced"] as const) {
    test(`the database file ${what} while open: every later write is refused, nothing is lost silently`, async () => {
      const directory = createTempDirectory();
      try {
        const path = join(directory.path, "store.db");
        const store = openSqliteStore({ path });
        const commits = toScriptedCommits("conv-1");
        const [first, second] = commits as [ScriptedCommit, ScriptedCommit];
        await commitScript(store, "conv-1", 1);
        // What a user (or a clean-up job) does: move the file away, perhaps put another there.
        renameSync(path, join(directory.path, "moved.db"));
        if (what === "replaced") await createDatabase(path, "other");
        await assert.rejects(
          store.commitInput({
            inputID: second.inputID,
            expectedVersion: 1,
            state: second.state,
            result: second.command,
          }),
          (error) => assertStoreError(error, "file_replaced", path),
        );
        await assert.rejects(
          store.saveClientOperation({
            operationID: "op",
            conversationID: "conv-1",
            turnID: first.state.turnID,
            toolCallID: "t",
            request: {},
            status: "planned",
          }),
          /was (deleted|replaced) while the server was running/,
        );
        await store.close();
      } finally {
        directory.remove();
      }
    });
  }

  test("a folder where the file should be cannot be opened", () => {
    const directory = createTempDirectory();
    try {
      assert.throws(
        () => openSqliteStore({ path: directory.path }),
        (error) => assertStoreError(error, "cannot_open", directory.path),
      );
    } finally {
      directory.remove();
    }
  });
});
