/**
 * SQLite failures as `StoreError`s whose messages name the file and say what to do. The SQLite
 * error stays attached as `cause`.
 */
import { StoreError, type StoreErrorCode } from "./errors.ts";

// Primary SQLite result codes (https://sqlite.org/rescode.html).
const SQLITE_PERM = 3;
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_READONLY = 8;
const SQLITE_IOERR = 10;
const SQLITE_CORRUPT = 11;
const SQLITE_FULL = 13;
const SQLITE_CANTOPEN = 14;
const SQLITE_NOTADB = 26;

interface SQLiteError {
  readonly code: "ERR_SQLITE_ERROR";
  readonly errcode: number;
  readonly errstr: string;
  readonly message: string;
}

export function isSQLiteError(error: unknown): error is SQLiteError {
  return (
    error instanceof Error &&
    (error as { code?: unknown }).code === "ERR_SQLITE_ERROR" &&
    typeof (error as { errcode?: unknown }).errcode === "number"
  );
}

/** `error` as a `StoreError`; other errors (including `StoreError`s) are returned unchanged. */
export function fromSQLiteError(error: unknown, location: string): unknown {
  if (!isSQLiteError(error)) return error;
  const [code, advice] = toCodeAndAdvice(error.errcode & 0xff, location);
  return new StoreError(code, location, `${advice} (SQLite: ${error.message})`, error);
}

const KEPT = "Everything committed before is kept; the failed change was not written.";

function toCodeAndAdvice(primary: number, location: string): [StoreErrorCode, string] {
  switch (primary) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return ["corrupt_database", toCorruptAdvice(location)];
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return ["read_only", toReadOnlyAdvice(location)];
    case SQLITE_FULL:
      return [
        "disk_full",
        `Cannot write to ${location}: the disk is full. Free some space, then retry. ${KEPT}`,
      ];
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return [
        "busy",
        `${location} is locked by another process (another cursor-byok?). Stop it or use ` +
          `another database file, then retry. ${KEPT}`,
      ];
    case SQLITE_CANTOPEN:
      return [
        "cannot_open",
        `Cannot open ${location}. Check that the path names a file (not a folder) in a folder ` +
          "you can write to.",
      ];
    case SQLITE_IOERR:
      return [
        "io_error",
        `Reading or writing ${location} failed. Check the disk and the file, then retry. ${KEPT}`,
      ];
    default:
      return ["database_error", `The database ${location} failed. ${KEPT}`];
  }
}

export function toCorruptAdvice(location: string): string {
  return (
    `${location} is not a cursor-byok database or is damaged. It was not changed. Move it ` +
    "aside (or restore it from a backup) and start cursor-byok again to create a new one, or " +
    "point cursor-byok at another database file."
  );
}

export function toReadOnlyAdvice(location: string): string {
  return (
    `Cannot write to ${location}: the file or its folder is read-only. Make both writable ` +
    `by you (e.g. chmod u+w), then retry. ${KEPT}`
  );
}
