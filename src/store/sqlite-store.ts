/**
 * The SQLite store: one database file through Node's built-in `node:sqlite`, in WAL mode, with
 * `synchronous = FULL` so that a commit that returned survives a crash of the process or of the
 * machine. The logic is create-store.ts; this file opens the file safely and maps rows.
 *
 * Opening never changes a file it does not recognise: a non-database or damaged file, another
 * program's database and a database from a newer cursor-byok are refused before anything is
 * written. A new file and its folder are created readable by the owner only.
 */
import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  mkdirSync,
  openSync,
  statSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, resolve } from "node:path";
import { DatabaseSync, type SQLOutputValue, type StatementSync } from "node:sqlite";
import { createStore, type StoreOptions } from "./create-store.ts";
import { toDefaultDatabasePath } from "./default-path.ts";
import { StoreError } from "./errors.ts";
import { APPLICATION_ID, migrate, readIdentity, SCHEMA_VERSION } from "./schema.ts";
import { createDashboardTables, prepareDashboardStatements } from "./sqlite-dashboard.ts";
import { fromSQLiteError, toReadOnlyAdvice } from "./sqlite-errors.ts";
import type {
  Backend,
  ClientOperationRow,
  ConversationRow,
  LLMCallRow,
  MessageRow,
  Tables,
} from "./tables.ts";
import type { ClientOperationStatus, LLMCallStatus, Store } from "./types.ts";

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
    return createStore(createSqliteBackend(db, location), options);
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

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

type Row = Record<string, SQLOutputValue>;

const text = (row: Row, column: string): string => String(row[column]);
const int = (row: Row, column: string): number => Number(row[column]);

const UNFINISHED_CALLS = "status in ('planned', 'streaming')";
const UNFINISHED_OPERATIONS = "status in ('planned', 'sent')";

function createSqliteBackend(db: DatabaseSync, location: string): Backend {
  const sql = (source: string): StatementSync => db.prepare(source);
  const statements = {
    readHead: sql(
      "select version, message_count, chain_hash, last_message_hash from conversations " +
        "where conversation_id = ?",
    ),
    readConversation: sql("select * from conversations where conversation_id = ?"),
    readMessages: sql(
      "select seq, json, hash, chain_hash from messages where conversation_id = ? order by seq",
    ),
    insertConversation: sql(
      "insert into conversations (conversation_id, version, message_count, chain_hash, " +
        "last_message_hash, state_json, created_at, updated_at) values (?, 1, ?, ?, ?, ?, ?, ?) " +
        "on conflict (conversation_id) do nothing",
    ),
    updateConversation: sql(
      "update conversations set version = version + 1, message_count = ?, chain_hash = ?, " +
        "last_message_hash = ?, state_json = ?, updated_at = ? " +
        "where conversation_id = ? and version = ?",
    ),
    appendMessage: sql(
      "insert into messages (conversation_id, seq, json, hash, chain_hash) values (?, ?, ?, ?, ?)",
    ),
    readInputCommit: sql("select * from input_commits where conversation_id = ? and input_id = ?"),
    insertInputCommit: sql(
      "insert into input_commits (conversation_id, input_id, version, message_count, " +
        "chain_hash, result_json, committed_at) values (?, ?, ?, ?, ?, ?, ?)",
    ),
    readLLMCall: sql("select * from llm_calls where call_id = ?"),
    insertLLMCall: sql(
      "insert into llm_calls (call_id, conversation_id, turn_id, model, request, request_hash, " +
        "messages_hash, message_count, last_message_hash, status, created_at, updated_at) " +
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ),
    updateLLMCallStatus: sql("update llm_calls set status = ?, updated_at = ? where call_id = ?"),
    readClientOperation: sql("select * from client_operations where operation_id = ?"),
    insertClientOperation: sql(
      "insert into client_operations (operation_id, conversation_id, turn_id, tool_call_id, " +
        "request_json, status, result_json, created_at, updated_at) " +
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ),
    updateClientOperation: sql(
      "update client_operations set status = ?, result_json = ?, updated_at = ? " +
        "where operation_id = ?",
    ),
    unfinishedCalls: sql(
      `select * from llm_calls where ${UNFINISHED_CALLS} order by created_at, call_id`,
    ),
    unfinishedCallsOf: sql(
      `select * from llm_calls where ${UNFINISHED_CALLS} and conversation_id = ? ` +
        "order by created_at, call_id",
    ),
    unfinishedOperations: sql(
      `select * from client_operations where ${UNFINISHED_OPERATIONS} ` +
        "order by created_at, operation_id",
    ),
    unfinishedOperationsOf: sql(
      `select * from client_operations where ${UNFINISHED_OPERATIONS} and conversation_id = ? ` +
        "order by created_at, operation_id",
    ),
    readRequestStream: sql(
      "select request_id, conversation_id, client_state, created_at from request_streams where request_id = ?",
    ),
    insertRequestStream: sql(
      "insert into request_streams (request_id, conversation_id, client_state, created_at) values (?, ?, ?, ?)",
    ),
    ...prepareDashboardStatements(sql),
  };

  const tables: Tables = {
    readHead(conversationID) {
      const row = statements.readHead.get(conversationID);
      return row === undefined
        ? null
        : {
            version: int(row, "version"),
            messageCount: int(row, "message_count"),
            chainHash: text(row, "chain_hash"),
            lastMessageHash: text(row, "last_message_hash"),
          };
    },
    readConversation(conversationID) {
      const row = statements.readConversation.get(conversationID);
      return row === undefined ? null : toConversationRow(row);
    },
    readMessages(conversationID) {
      return statements.readMessages.all(conversationID).map(
        (row): MessageRow => ({
          seq: int(row, "seq"),
          json: text(row, "json"),
          hash: text(row, "hash"),
          chainHash: text(row, "chain_hash"),
        }),
      );
    },
    insertConversation(row) {
      const { changes } = statements.insertConversation.run(
        row.conversationID,
        row.messageCount,
        row.chainHash,
        row.lastMessageHash,
        row.stateJSON,
        row.createdAt,
        row.updatedAt,
      );
      return Number(changes) === 1;
    },
    updateConversation(row, expectedVersion) {
      const { changes } = statements.updateConversation.run(
        row.messageCount,
        row.chainHash,
        row.lastMessageHash,
        row.stateJSON,
        row.updatedAt,
        row.conversationID,
        expectedVersion,
      );
      return Number(changes) === 1;
    },
    appendMessages(conversationID, rows) {
      for (const row of rows) {
        statements.appendMessage.run(conversationID, row.seq, row.json, row.hash, row.chainHash);
      }
    },

    readInputCommit(conversationID, inputID) {
      const row = statements.readInputCommit.get(conversationID, inputID);
      return row === undefined
        ? null
        : {
            conversationID: text(row, "conversation_id"),
            inputID: text(row, "input_id"),
            version: int(row, "version"),
            messageCount: int(row, "message_count"),
            chainHash: text(row, "chain_hash"),
            resultJSON: text(row, "result_json"),
            committedAt: int(row, "committed_at"),
          };
    },
    insertInputCommit(row) {
      statements.insertInputCommit.run(
        row.conversationID,
        row.inputID,
        row.version,
        row.messageCount,
        row.chainHash,
        row.resultJSON,
        row.committedAt,
      );
    },

    readLLMCall(callID) {
      const row = statements.readLLMCall.get(callID);
      return row === undefined ? null : toLLMCallRow(row);
    },
    insertLLMCall(row) {
      statements.insertLLMCall.run(
        row.callID,
        row.conversationID,
        row.turnID,
        row.model,
        row.request,
        row.requestHash,
        row.messagesHash,
        row.messageCount,
        row.lastMessageHash,
        row.status,
        row.createdAt,
        row.updatedAt,
      );
    },
    updateLLMCallStatus(callID, status, updatedAt) {
      statements.updateLLMCallStatus.run(status, updatedAt, callID);
    },

    readClientOperation(operationID) {
      const row = statements.readClientOperation.get(operationID);
      return row === undefined ? null : toClientOperationRow(row);
    },
    insertClientOperation(row) {
      statements.insertClientOperation.run(
        row.operationID,
        row.conversationID,
        row.turnID,
        row.toolCallID,
        row.requestJSON,
        row.status,
        row.resultJSON,
        row.createdAt,
        row.updatedAt,
      );
    },
    updateClientOperation(operationID, status, resultJSON, updatedAt) {
      statements.updateClientOperation.run(status, resultJSON, updatedAt, operationID);
    },

    listUnfinishedLLMCalls(conversationID) {
      const rows =
        conversationID === null
          ? statements.unfinishedCalls.all()
          : statements.unfinishedCallsOf.all(conversationID);
      return rows.map(toLLMCallRow);
    },
    listUnfinishedClientOperations(conversationID) {
      const rows =
        conversationID === null
          ? statements.unfinishedOperations.all()
          : statements.unfinishedOperationsOf.all(conversationID);
      return rows.map(toClientOperationRow);
    },

    readRequestStream(requestID) {
      const row = statements.readRequestStream.get(requestID);
      return row === undefined
        ? null
        : {
            requestID: text(row, "request_id"),
            conversationID: text(row, "conversation_id"),
            clientState: row.client_state === null ? null : text(row, "client_state"),
            createdAt: int(row, "created_at"),
          };
    },
    insertRequestStream(row) {
      statements.insertRequestStream.run(
        row.requestID,
        row.conversationID,
        row.clientState,
        row.createdAt,
      );
    },
    ...createDashboardTables(statements),
  };

  // The file this connection has open; a write first checks the path still names it.
  const opened = identify(location);
  const checkStillOpen = (): void => {
    const now = identify(location);
    if (opened !== null && now === opened) return;
    throw new StoreError(
      "file_replaced",
      location,
      `The database file ${location} was ${now === null ? "deleted" : "replaced"} while the ` +
        "server was running, so nothing more is saved (it would be lost). Restart the server; " +
        "if the file was removed by mistake, restore it from a backup first.",
    );
  };

  const inTransaction = <T>(begin: string, work: (tables: Tables) => T): T => {
    try {
      db.exec(begin);
      const result = work(tables);
      db.exec("commit");
      return result;
    } catch (error) {
      if (db.isOpen && db.isTransaction) db.exec("rollback");
      throw fromSQLiteError(error, location);
    }
  };

  return {
    location,
    write: (work) => {
      checkStillOpen();
      return inTransaction("begin immediate", work);
    },
    read: (work) => inTransaction("begin", work),
    close: () => db.close(),
  };
}

/** The file's identity (device and inode), or null when there is no file at `location`. */
function identify(location: string): string | null {
  try {
    const stats = statSync(location, { bigint: true });
    return `${stats.dev}:${stats.ino}`;
  } catch {
    return null;
  }
}

function toConversationRow(row: Row): ConversationRow {
  return {
    conversationID: text(row, "conversation_id"),
    version: int(row, "version"),
    messageCount: int(row, "message_count"),
    chainHash: text(row, "chain_hash"),
    lastMessageHash: text(row, "last_message_hash"),
    stateJSON: text(row, "state_json"),
    createdAt: int(row, "created_at"),
    updatedAt: int(row, "updated_at"),
  };
}

function toLLMCallRow(row: Row): LLMCallRow {
  return {
    callID: text(row, "call_id"),
    conversationID: text(row, "conversation_id"),
    turnID: text(row, "turn_id"),
    model: text(row, "model"),
    request: text(row, "request"),
    requestHash: text(row, "request_hash"),
    messagesHash: text(row, "messages_hash"),
    messageCount: int(row, "message_count"),
    lastMessageHash: text(row, "last_message_hash"),
    status: text(row, "status") as LLMCallStatus,
    createdAt: int(row, "created_at"),
    updatedAt: int(row, "updated_at"),
  };
}

function toClientOperationRow(row: Row): ClientOperationRow {
  const result = row.result_json;
  return {
    operationID: text(row, "operation_id"),
    conversationID: text(row, "conversation_id"),
    turnID: text(row, "turn_id"),
    toolCallID: text(row, "tool_call_id"),
    requestJSON: text(row, "request_json"),
    status: text(row, "status") as ClientOperationStatus,
    resultJSON: result === null || result === undefined ? null : String(result),
    createdAt: int(row, "created_at"),
    updatedAt: int(row, "updated_at"),
  };
}
