/**
 * The store's failures: one error class with a closed set of codes. Every message names the
 * database (file path, or the in-memory store) and says what the user can do. The original
 * driver error, if any, is kept as `cause` for logs.
 *
 * Not errors: a lost compare-and-swap, a repeated input and a second commit of a model call are
 * results of `commitInput` (types.ts).
 */

export const STORE_ERROR_CODES = [
  /** The file cannot be opened (a directory, a missing parent that cannot be created, …). */
  "cannot_open",
  /** The file is not a SQLite database, or its contents are damaged. */
  "corrupt_database",
  /** A SQLite database that belongs to another program. */
  "foreign_database",
  /** Written by a newer cursor-byok; this build does not know its schema. */
  "newer_schema",
  /** Written by an older cursor-byok, and opened read-only, so it cannot be upgraded here. */
  "older_schema",
  /** The file or its directory cannot be written. */
  "read_only",
  /** The disk (or the configured size limit) is full. */
  "disk_full",
  /** Another process holds the database lock for longer than the busy timeout. */
  "busy",
  /** The operating system reported an I/O error. */
  "io_error",
  /** The state's history does not extend the stored history (hashes differ, or it shrank). */
  "chain_mismatch",
  /** An argument is not valid: not plain JSON, a missing result, a wrong conversation, … */
  "invalid_argument",
  /**
   * A commit binds a request id that is bound to another conversation: a client bug or a reused
   * request id. Nothing of the commit was written.
   */
  "request_bound_elsewhere",
  /** A status change or diagnostic for a record that does not exist. */
  "not_found",
  /** The store was closed. */
  "closed",
  /** Another server process uses the same database (see data-lock.ts). */
  "locked",
  /**
   * The database file was deleted or replaced while this process had it open: writes would go to
   * a file nobody will open again, so none are made.
   */
  "file_replaced",
  /** Any other database failure. */
  "database_error",
] as const;

export type StoreErrorCode = (typeof STORE_ERROR_CODES)[number];

export class StoreError extends Error {
  override readonly name = "StoreError";
  readonly code: StoreErrorCode;
  /** The database the error is about: a file path, or a label for the in-memory store. */
  readonly location: string;

  constructor(code: StoreErrorCode, location: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.code = code;
    this.location = location;
  }
}

/** True for a `StoreError`, and, when `code` is given, one with that code. */
export function isStoreError(value: unknown, code?: StoreErrorCode): value is StoreError {
  return value instanceof StoreError && (code === undefined || value.code === code);
}
