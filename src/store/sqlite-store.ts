/**
 * The SQLite store: one database file through Node's built-in `node:sqlite`, in WAL mode, with
 * `synchronous = FULL` so that a commit that returned survives a crash of the process or of the
 * machine. The logic is create-store.ts; this file opens the file safely, and
 * sqlite-backend.ts holds the statements and maps rows.
 *
 * Opening never changes a file it does not recognise: a non-database or damaged file, another
 * program's database and a database from a newer cursor-byok are refused before anything is
 * written. A new file and its folder are created readable by the owner only.
 */
import { accessSync, chmodSync, closeSync, constants, mkdirSync, openSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, resolve } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { createStore, type StoreOptions } from "./create-store.ts";
import { toDefaultDatabasePath } from "./default-path.ts";
import { StoreError } from "./errors.ts";
import { APPLICATION_ID, migrate, readIdentity, SCHEMA_VERSION } from "./schema.ts";
import { createSqliteBackend } from "./sqlite-backend.ts";
import { fromSQLiteError, toReadOnlyAdvice } from "./sqlite-errors.ts";
import type { Store } from "./types.ts";
import {
  type BackgroundCheckpointOptions,
  startWalCheckpointer,
  type WalCheckpointer,
} from "./wal-checkpointer.ts";

export interface SqliteStoreOptions extends StoreOptions {
  /** The database file. Default: `toDefaultDatabasePath` for this user and platform. */
  readonly path?: string;
  /** How long a write waits for another process's lock before failing as `busy`. Default 5 s. */
  readonly busyTimeoutMs?: number;
  /**
   * An upper bound on the file's size, in database pages (SQLite `max_page_count`). A write that
   * would grow the file beyond it fails as `disk_full`, exactly like a full disk.
   */
  readonly maxPageCount?: number;
  /**
   * Opens an existing file for reading only: nothing is created, upgraded or written (for
   * commands that only show figures while a server may be using the file). A file at an older
   * schema version is refused as `older_schema`; the server upgrades it when it starts.
   */
  readonly readOnly?: boolean;
  /**
   * Runs the WAL checkpoints in a worker thread instead of inside the commit that crosses
   * SQLite's threshold (wal-checkpointer.ts): for the server's long-lived store, whose commits
   * block the event loop of every stream. Costs a thread and a second connection, so commands
   * that open the store briefly leave it off (default). Ignored with `readOnly`.
   */
  readonly backgroundCheckpoints?: boolean | BackgroundCheckpointOptions;
}

/** Opens (creating or upgrading if needed) the database; throws `StoreError`s that name it. */
export function openSqliteStore(options: SqliteStoreOptions = {}): Store {
  const location = resolve(
    options.path ??
      toDefaultDatabasePath({ env: process.env, platform: process.platform, homeDir: homedir() }),
  );
  if (options.readOnly === true) return openReadOnly(location, options);
  createFileIfMissing(location);
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(location, {
      timeout: options.busyTimeoutMs ?? 5000,
      enableForeignKeyConstraints: true,
      enableDoubleQuotedStringLiterals: false,
      defensive: true,
    });
  } catch (error) {
    throw fromSQLiteError(error, location);
  }
  try {
    checkIdentity(db, location);
    checkWritable(location);
    const mode = db.prepare("pragma journal_mode = wal").get()?.journal_mode;
    if (mode !== "wal") {
      throw new StoreError(
        "database_error",
        location,
        `${location} cannot use write-ahead logging (journal mode stayed ${String(mode)}); ` +
          "put the database on a local disk.",
      );
    }
    db.exec("pragma synchronous = full");
    if (options.maxPageCount !== undefined) {
      if (!Number.isSafeInteger(options.maxPageCount) || options.maxPageCount < 1) {
        throw new StoreError(
          "invalid_argument",
          location,
          "maxPageCount must be a positive integer.",
        );
      }
      db.exec(`pragma max_page_count = ${options.maxPageCount}`);
    }
    migrate(db);
    const background = options.backgroundCheckpoints ?? false;
    if (background === false) return createStore(createSqliteBackend(db, location), options);
    let checkpointer: WalCheckpointer | undefined;
    const backend = createSqliteBackend(db, location, {
      afterWrite: () => checkpointer?.afterCommit(),
      beforeClose: async () => checkpointer?.stop(),
    });
    const store = createStore(backend, options);
    checkpointer = startWalCheckpointer(db, location, background === true ? {} : background);
    return store;
  } catch (error) {
    db.close();
    throw fromSQLiteError(error, location);
  }
}

function openReadOnly(location: string, options: SqliteStoreOptions): Store {
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(location, {
      readOnly: true,
      timeout: options.busyTimeoutMs ?? 5000,
      enableDoubleQuotedStringLiterals: false,
      defensive: true,
    });
  } catch (error) {
    throw fromSQLiteError(error, location);
  }
  try {
    checkIdentity(db, location);
    const { userVersion } = readIdentity(db);
    if (userVersion < SCHEMA_VERSION) {
      throw new StoreError(
        "older_schema",
        location,
        `${location} was written by an older cursor-byok (schema version ${userVersion}; this ` +
          `one reads version ${SCHEMA_VERSION}) and was opened read-only, so it was not changed. ` +
          "Start the server once (`cursor-byok`) to upgrade it, then run this again.",
      );
    }
    return createStore(createSqliteBackend(db, location), options);
  } catch (error) {
    db.close();
    throw fromSQLiteError(error, location);
  }
}

/** A new file and a new folder are created for the owner only (0600 and 0700). */
function createFileIfMissing(location: string): void {
  try {
    const directory = dirname(location);
    if (mkdirSync(directory, { recursive: true, mode: 0o700 }) !== undefined) {
      chmodSync(directory, 0o700);
    }
    const fd = openSync(location, "wx", 0o600);
    closeSync(fd);
    chmodSync(location, 0o600);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "EEXIST") return;
    if (code === "EACCES" || code === "EPERM" || code === "EROFS") {
      throw new StoreError("read_only", location, toReadOnlyAdvice(location), error);
    }
    throw new StoreError(
      "cannot_open",
      location,
      `Cannot create ${location} (${code ?? String(error)}). Check the path, or point ` +
        "cursor-byok at another database file.",
      error,
    );
  }
}

function checkIdentity(db: DatabaseSync, location: string): void {
  const { applicationID, userVersion, objectCount } = readIdentity(db);
  if (applicationID === APPLICATION_ID) {
    if (userVersion > SCHEMA_VERSION) {
      throw new StoreError(
        "newer_schema",
        location,
        `${location} was written by a newer cursor-byok (schema version ${userVersion}; this ` +
          `one knows versions up to ${SCHEMA_VERSION}). It was not changed. Upgrade ` +
          "cursor-byok, or point it at another database file.",
      );
    }
    return;
  }
  if (applicationID === 0 && userVersion === 0 && objectCount === 0) return;
  throw new StoreError(
    "foreign_database",
    location,
    `${location} is a SQLite database of another program (application id ${applicationID}, ` +
      `${objectCount} schema objects). cursor-byok did not change it; point cursor-byok at ` +
      "another database file.",
  );
}

/** WAL needs the file and its folder writable; refuse early instead of failing mid-turn. */
function checkWritable(location: string): void {
  for (const path of [location, dirname(location)]) {
    try {
      accessSync(path, constants.W_OK);
    } catch (error) {
      throw new StoreError("read_only", location, toReadOnlyAdvice(location), error);
    }
  }
}
