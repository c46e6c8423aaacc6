/**
 * `cursor-byok db compact` on a real SQLite file: the space released by migration 7's rule
 * (only a conversation's newest request stream keeps its saved run request) goes back to the disk,
 * the data stays, and a file a server holds is refused.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { after, test } from "node:test";
import packageJson from "../../package.json" with { type: "json" };
import { DATABASE_FILE, lockDatabase, openSqliteStore } from "../store/index.ts";
import { migrate } from "../store/schema.ts";
import { runCli } from "./run-cli.ts";
import { createTempHome, createTestIO } from "./testing.ts";

const CONVERSATION = "compact-me";
const home = createTempHome();
after(() => home.cleanup());

async function run(args: string[]) {
  const io = createTestIO({ home: home.dir, env: home.env });
  const code = await runCli(args, io, { version: packageJson.version });
  return { code, out: io.out(), err: io.err() };
}

/**
 * A database at schema 6 (before only the newest stream kept its state) holding one conversation
 * whose current turn is the last of `turns`, each turn start's stream with `bytes` of saved state.
 */
function writeVersion6(file: string, turns: number, bytes: number): void {
  const db = new DatabaseSync(file);
  try {
    migrate(db, 6);
    db.prepare("insert into conversations values (?, 1, 0, '', '', ?, 1, 1)").run(
      CONVERSATION,
      JSON.stringify({ turnID: `t${turns - 1}` }),
    );
    const insert = db.prepare("insert into request_streams values (?, ?, ?, ?, ?)");
    for (let i = 0; i < turns; i++) {
      insert.run(`req-${i}`, CONVERSATION, `t${i}`, randomBytes(bytes), i);
    }
  } finally {
    db.close();
  }
}

const sizeOf = (file: string) =>
  statSync(file).size + (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);

test("db compact gives the released space back and keeps every row", async () => {
  const dir = path.join(home.dir, "data");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, DATABASE_FILE);
  writeVersion6(file, 30, 200_000);
  const before = sizeOf(file);
  assert.ok(before > 5_000_000, `every turn's state is in the file: ${before} bytes`);

  const result = await run(["db", "compact", "--data-dir", dir]);
  assert.equal(result.code, 0, result.err);
  assert.match(result.out, /MB → .* MB \(\d+ free pages given back\)/);
  const after = sizeOf(file);
  // What is left: the newest stream's state and the rest (≈ 0.3 MB).
  assert.ok(after < before / 5, `${before} → ${after} bytes`);

  const store = openSqliteStore({ path: file });
  try {
    for (let i = 0; i < 29; i++) {
      const bound = await store.findRequestStream(`req-${i}`);
      assert.deepEqual([bound?.conversationID, bound?.clientState], [CONVERSATION, null]);
    }
    assert.equal((await store.findRequestStream("req-29"))?.clientState?.byteLength, 200_000);
  } finally {
    await store.close();
  }
});

test("db compact is refused while a server holds the file, which stays as it was", async () => {
  const dir = path.join(home.dir, "held");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, DATABASE_FILE);
  writeVersion6(file, 3, 1_000);
  const lock = lockDatabase(file);
  try {
    const before = statSync(file);
    const result = await run(["db", "compact", "--data-dir", dir]);
    assert.notEqual(result.code, 0);
    assert.match(result.err, /Another cursor-byok server \(pid \d+\) is using/);
    assert.equal(statSync(file).mtimeMs, before.mtimeMs);
  } finally {
    lock.release();
  }
});

test("db compact on a data directory without a database has nothing to do", async () => {
  const dir = path.join(home.dir, "empty");
  const result = await run(["db", "compact", "--data-dir", dir]);
  assert.equal(result.code, 0, result.err);
  assert.match(result.out, /does not exist yet; nothing to do/);
  assert.equal(existsSync(path.join(dir, DATABASE_FILE)), false);
});
