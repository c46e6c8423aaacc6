/**
 * The SQLite backend (tables.ts's `Backend`) over an open database: the prepared statements, row
 * mapping, and one transaction per `read`/`write`. A write first checks that the path still names
 * the file this connection opened. Opening the file safely is sqlite-store.ts.
 */
import { statSync } from "node:fs";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { StoreError } from "./errors.ts";
import { toPrefixEnd } from "./id-prefix.ts";
import { int, text, toClientOperationRow, toConversationRow, toLLMCallRow } from "./row-mapping.ts";
import { createDashboardTables, prepareDashboardStatements } from "./sqlite-dashboard.ts";
import { fromSQLiteError } from "./sqlite-errors.ts";
import { createSerialQueue, toAsyncTables } from "./sync-tables.ts";
import type { Backend, MessageRow, SyncTables, Tables, TurnBlobRow } from "./tables.ts";

const UNFINISHED_CALLS = "status in ('planned', 'streaming')";
const UNFINISHED_OPERATIONS = "status in ('planned', 'sent')";

/** What the store's connection does around its transactions (sqlite-store.ts). */
export interface SqliteBackendHooks {
  /** After each committed write transaction (wal-checkpointer.ts); must not throw. */
  readonly afterWrite?: () => void;
  /** Before the connection closes, after the last transaction (stops the checkpoint worker). */
  readonly beforeClose?: () => Promise<void>;
}

/**
 * `readNewestConversationID`: a SEARCH of the primary key's index over the prefix's range
 * (sqlite-store.test.ts checks the plan); `length` and `substr` count characters, as `instr` does.
 */
export const NEWEST_CONVERSATION_SQL =
  "select conversation_id from conversations " +
  "where conversation_id >= ?1 and conversation_id < ?2 " +
  "and instr(substr(conversation_id, length(?1) + 1), ?3) = 0 " +
  "order by created_at desc, conversation_id desc limit 1";

export function createSqliteBackend(
  db: DatabaseSync,
  location: string,
  hooks: SqliteBackendHooks = {},
): Backend {
  const sql = (source: string): StatementSync => db.prepare(source);
  const statements = {
    readHead: sql(
      "select version, message_count, chain_hash, last_message_hash from conversations " +
        "where conversation_id = ?",
    ),
    readConversation: sql("select * from conversations where conversation_id = ?"),
    readNewestConversationID: sql(NEWEST_CONVERSATION_SQL),
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
    readImage: sql("select data from images where hash = ?"),
    insertImage: sql("insert into images (hash, data) values (?, ?) on conflict do nothing"),
    readRequestStream: sql(
      "select request_id, conversation_id, turn_id, client_state, created_at from request_streams where request_id = ?",
    ),
    insertRequestStream: sql(
      "insert into request_streams (request_id, conversation_id, turn_id, client_state, created_at) values (?, ?, ?, ?, ?)",
    ),
    // By the partial index `request_streams_saved`: only rows still holding a state are read.
    releaseRequestStreams: sql(
      "update request_streams set client_state = null " +
        "where conversation_id = ? and request_id <> ? and client_state is not null",
    ),
    insertTurnBlob: sql(
      "insert into turn_blobs (blob_id, conversation_id, request_id) values (?, ?, ?) " +
        "on conflict do nothing",
    ),
    readTurnBlob: sql("select conversation_id, request_id from turn_blobs where blob_id = ?"),
    // By `turn_blobs_by_request`.
    readTurnBlobsOf: sql(
      "select blob_id, conversation_id from turn_blobs where request_id = ? order by seq desc",
    ),
    // By `turn_blobs_by_request`: the rows of one request older than its `keep`-th newest.
    trimTurnBlobs: sql(
      "delete from turn_blobs where request_id = ? and seq < (select seq from turn_blobs " +
        "where request_id = ? order by seq desc limit 1 offset ?)",
    ),
    ...prepareDashboardStatements(sql),
  };

  const tables: SyncTables = {
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
    lockHead(conversationID) {
      // A write transaction (`begin immediate`) holds the database's writer lock already.
      return tables.readHead(conversationID);
    },
    readNewestConversationID(prefix, without) {
      const row = statements.readNewestConversationID.get(prefix, toPrefixEnd(prefix), without);
      return row === undefined ? null : text(row, "conversation_id");
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

    readImage(hash) {
      const row = statements.readImage.get(hash);
      return row === undefined ? null : text(row, "data");
    },
    insertImage(hash, data) {
      statements.insertImage.run(hash, data);
    },

    readRequestStream(requestID) {
      const row = statements.readRequestStream.get(requestID);
      return row === undefined
        ? null
        : {
            requestID: text(row, "request_id"),
            conversationID: text(row, "conversation_id"),
            turnID: row.turn_id === null ? null : text(row, "turn_id"),
            clientState: row.client_state instanceof Uint8Array ? row.client_state : null,
            createdAt: int(row, "created_at"),
          };
    },
    insertRequestStream(row) {
      statements.insertRequestStream.run(
        row.requestID,
        row.conversationID,
        row.turnID,
        row.clientState,
        row.createdAt,
      );
    },
    releaseRequestStreams(conversationID, keepRequestID) {
      statements.releaseRequestStreams.run(conversationID, keepRequestID);
    },
    insertTurnBlob(row) {
      statements.insertTurnBlob.run(
        Buffer.from(row.blobID, "hex"),
        row.conversationID,
        row.requestID,
      );
    },
    readTurnBlob(blobID) {
      const row = statements.readTurnBlob.get(Buffer.from(blobID, "hex"));
      return row === undefined
        ? null
        : {
            blobID,
            conversationID: text(row, "conversation_id"),
            requestID: text(row, "request_id"),
          };
    },
    readTurnBlobsOf(requestID) {
      return statements.readTurnBlobsOf.all(requestID).map(
        (row): TurnBlobRow => ({
          blobID: Buffer.from(row.blob_id as Uint8Array).toString("hex"),
          conversationID: text(row, "conversation_id"),
          requestID,
        }),
      );
    },
    trimTurnBlobs(requestID, keep) {
      statements.trimTurnBlobs.run(requestID, requestID, keep - 1);
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

  const lifted = toAsyncTables(tables);
  // One connection: its transactions run one after another (sync-tables.ts).
  const serial = createSerialQueue();
  // `restoreOwed`: the connection may be at NORMAL. The pragmas go through `exec`, not a prepared
  // statement: SQLite applies a `pragma synchronous = …` when the statement is prepared, so a
  // cached one would not set the level again when run. (No read of the level either.)
  let restoreOwed = false;
  const inTransaction = <T>(
    begin: string,
    work: (tables: Tables) => Promise<T>,
    afterCommit?: () => void,
    relaxed = false,
  ): Promise<T> =>
    serial(async () => {
      // WriteOptions `relaxed` (tables.ts): committed without an fsync (`synchronous = NORMAL`
      // in WAL mode), then back to FULL, the level sqlite-store.ts sets at open (a constant, not
      // the level read before: a restore that was skipped must not become the new normal).
      // Nothing else runs on the connection meanwhile (the serial queue). SQLite refuses the
      // pragma inside a transaction, so a restore that cannot run now (the rollback failed) is
      // owed: the next write of any kind applies it before its `begin`.
      try {
        if (relaxed) {
          db.exec("pragma synchronous = normal");
          restoreOwed = true;
        } else if (restoreOwed) {
          restoreFull();
        }
        db.exec(begin);
        const result = await work(lifted);
        db.exec("commit");
        afterCommit?.();
        return result;
      } catch (error) {
        try {
          if (db.isOpen && db.isTransaction) db.exec("rollback");
        } catch {
          // The caller gets the transaction's own error; the next `begin` meets what is left.
        }
        throw fromSQLiteError(error, location);
      } finally {
        // Never throws over the transaction's own outcome: a failed restore stays owed.
        if (restoreOwed && db.isOpen && !db.isTransaction) {
          try {
            restoreFull();
          } catch {
            // Owed still: the next write applies it (and fails with its error if it still can't).
          }
        }
      }
    });
  /** Back to `synchronous = FULL` (sqlite-store.ts's level). Throws, still owed, if it can't. */
  const restoreFull = () => {
    db.exec("pragma synchronous = full");
    restoreOwed = false;
  };

  return {
    location,
    write: async (work, options) => {
      checkStillOpen();
      // A relaxed write does not wake the WAL checkpointer: its fsyncs would compete with the
      // next commit's for rows that do not need one; the next ordinary commit wakes it.
      const relaxed = options?.relaxed === true;
      return inTransaction(
        "begin immediate",
        work,
        relaxed ? undefined : hooks.afterWrite,
        relaxed,
      );
    },
    read: (work) => inTransaction("begin", work),
    // The checkpoint worker's connection closes first, so that this one is the file's last and
    // its close checkpoints the WAL and removes it, as without a worker.
    close: () =>
      serial(async () => {
        await hooks.beforeClose?.();
        db.close();
      }),
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
