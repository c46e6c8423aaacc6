/**
 * One server per database. Two servers on one file would each believe they own the conversations
 * in it (stream bindings, unfinished operations), so the second one is refused, naming the first.
 *
 * The lock is an exclusive SQLite lock on `<database>.lock` (a file lock the operating system
 * releases when the process dies, however it dies: a crash cannot leave it stuck); the owner's
 * pid is written next to it in `<database>.owner` so the refusal can name it.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { errorMessage } from "../errors/error-message.ts";
import { StoreError } from "./errors.ts";

export interface DatabaseLock {
  /** Releases the lock (and removes the owner file); idempotent. */
  release(): void;
}

/** Takes the lock of the database at `databasePath`, or throws `StoreError("locked")`. */
export function lockDatabase(databasePath: string): DatabaseLock {
  const lockPath = `${databasePath}.lock`;
  const ownerPath = `${databasePath}.owner`;
  let db: DatabaseSync;
  try {
    mkdirSync(dirname(databasePath), { recursive: true, mode: 0o700 });
    db = new DatabaseSync(lockPath, { timeout: 0 });
  } catch (error) {
    throw new StoreError(
      "cannot_open",
      lockPath,
      `Cannot open the lock file ${lockPath}: ${errorMessage(error)}`,
      error,
    );
  }
  try {
    // Exclusive locking mode keeps the lock taken by the first write until the connection closes.
    db.exec("pragma locking_mode = exclusive");
    db.exec("begin exclusive");
    db.exec("create table if not exists lock (taken integer)");
    db.exec("commit");
  } catch (error) {
    db.close();
    const owner = readOwner(ownerPath);
    throw new StoreError(
      "locked",
      databasePath,
      `Another cursor-byok server (${owner === null ? "process id unknown" : `pid ${owner}`}) ` +
        `is using ${databasePath}. Stop it first, or give this one its own data directory ` +
        "(--data-dir).",
      error,
    );
  }
  writeFileSync(ownerPath, `${process.pid}\n`, { mode: 0o600 });
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      if (readOwner(ownerPath) === process.pid) rmSync(ownerPath, { force: true });
      db.close();
    },
  };
}

function readOwner(ownerPath: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(ownerPath, "utf8").trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
