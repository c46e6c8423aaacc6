/**
 * The PostgreSQL store, for a team running several instances on one database (docs/team.md):
 * the store logic of create-store.ts over a pool of connections. Each store operation is one
 * transaction on one pooled connection; the compare-and-swap on a conversation's version is one
 * `update … where version = $n` statement, so of two instances committing on the same version
 * exactly one wins, whatever the isolation level (the loser's update waits for the winner's
 * commit, then matches no row). A transaction that loses a race on a unique key, a serialization
 * failure or a deadlock is run again from the start, which turns it into the result a store
 * with one writer gives (`duplicate`, `conflict`, or the record as the winner saved it).
 *
 * Every statement has a time-out (`statement_timeout`), and so has an open transaction left
 * idle; the URL's password never appears in a location, an error or a log line.
 */
import pg from "pg";
import { createStore, type StoreOptions } from "./create-store.ts";
import { StoreError, type StoreErrorCode } from "./errors.ts";
import { migratePostgres, POSTGRES_SCHEMA_VERSION, readSchemaVersion } from "./postgres-schema.ts";
import type {
  Backend,
  CallListRow,
  CallUsageRow,
  ClientOperationRow,
  ConversationRow,
  DailyUsageRow,
  LLMCallRow,
  MessageRow,
  SummaryRow,
  Tables,
} from "./tables.ts";
import type { ClientOperationStatus, LLMCallStatus, Store } from "./types.ts";

export interface PostgresStoreOptions extends StoreOptions {
  /** `postgres://user:password@host:port/database` (the password is never shown). */
  readonly url: string;
  /** Connections in the pool. Default 10. */
  readonly poolSize?: number;
  /** The longest one statement may run before PostgreSQL cancels it. Default 15 s. */
  readonly statementTimeoutMs?: number;
  /** How long to wait for a connection (new or from the pool). Default 10 s. */
  readonly connectTimeoutMs?: number;
  /**
   * Apply missing migrations at open (default). `false` refuses a database that is not at this
   * build's schema version (`older_schema`), for commands that must not change it.
   */
  readonly migrate?: boolean;
}

/** Transactions run again at most this many times after a retryable failure. */
const RETRIES = 5;
/** unique_violation, serialization_failure, deadlock_detected. */
const RETRYABLE = new Set(["23505", "40001", "40P01"]);

/** The URL without its password: what errors and logs name. */
export function toPostgresLocation(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = "";
    parsed.search = "";
    return parsed.toString();
  } catch {
    return "the PostgreSQL database (unreadable URL)";
  }
}

/** Opens a pool, checks the database is ours, applies migrations; throws `StoreError`s. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const pool = createPool(options);
  const location = toPostgresLocation(options.url);
  try {
    await prepareSchema(pool, location, options.migrate ?? true);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw fromPostgresError(error, location);
  }
  return createStore(createPostgresBackend(pool, location), options);
}

/** `cursor-byok db migrate`: applies missing migrations; returns the versions applied. */
export async function migratePostgresDatabase(
  options: Pick<PostgresStoreOptions, "url" | "connectTimeoutMs" | "statementTimeoutMs">,
): Promise<{ applied: number[]; version: number; location: string }> {
  const pool = createPool({ ...options, poolSize: 1 });
  const location = toPostgresLocation(options.url);
  try {
    const applied = await prepareSchema(pool, location, true);
    return { applied, version: POSTGRES_SCHEMA_VERSION, location };
  } catch (error) {
    throw fromPostgresError(error, location);
  } finally {
    await pool.end().catch(() => undefined);
  }
}

export function createPool(
  options: Pick<
    PostgresStoreOptions,
    "url" | "poolSize" | "statementTimeoutMs" | "connectTimeoutMs"
  >,
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    statement_timeout: options.statementTimeoutMs ?? 15_000,
    idle_in_transaction_session_timeout: (options.statementTimeoutMs ?? 15_000) * 2,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: "cursor-byok",
  });
  // An idle connection that breaks (server restart) is dropped by the pool; the next query
  // opens a new one. Without a listener the error would end the process.
  pool.on("error", () => undefined);
  return pool;
}

async function prepareSchema(pool: pg.Pool, location: string, migrate: boolean): Promise<number[]> {
  const client = await pool.connect();
  try {
    const check = await readSchemaVersion(client);
    if (check.type === "foreign") {
      throw new StoreError(
        "foreign_database",
        location,
        `${location} holds tables of another program (a "conversations" table without ` +
          "cursor-byok's schema list). Give cursor-byok its own database or schema; nothing " +
          "was changed.",
      );
    }
    if (check.type === "newer") {
      throw new StoreError(
        "newer_schema",
        location,
        `${location} was upgraded by a newer cursor-byok (schema ${check.version}; this build ` +
          `knows ${POSTGRES_SCHEMA_VERSION}). Upgrade cursor-byok; nothing was changed.`,
      );
    }
    if (!migrate) {
      if (check.version < POSTGRES_SCHEMA_VERSION) {
        throw new StoreError(
          "older_schema",
          location,
          `${location} is at schema ${check.version}; run \`cursor-byok db migrate\` (or start ` +
            "the server, which migrates) first.",
        );
      }
      return [];
    }
    return await migratePostgres(client);
  } finally {
    client.release();
  }
}

export function createPostgresBackend(pool: pg.Pool, location: string): Backend {
  const transaction = async <T>(
    begin: string,
    work: (tables: Tables) => Promise<T>,
  ): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw fromPostgresError(error, location);
      }
      let broken: Error | undefined;
      try {
        await client.query(begin);
        const result = await work(createPostgresTables(client));
        await client.query("commit");
        return result;
      } catch (error) {
        try {
          await client.query("rollback");
        } catch (rollbackError) {
          broken = rollbackError instanceof Error ? rollbackError : new Error("rollback failed");
        }
        if (attempt < RETRIES && RETRYABLE.has(sqlState(error) ?? "")) continue;
        throw fromPostgresError(error, location);
      } finally {
        client.release(broken);
      }
    }
  };
  return {
    location,
    write: (work) => transaction("begin", work),
    read: (work) => transaction("begin isolation level repeatable read read only", work),
    close: () => pool.end(),
  };
}

type Row = Record<string, unknown>;
const text = (row: Row, column: string): string => String(row[column]);
const int = (row: Row, column: string): number => Number(row[column]);
const optionalText = (row: Row, column: string): string | null =>
  row[column] === null || row[column] === undefined ? null : String(row[column]);

const UNFINISHED_CALLS = "status in ('planned', 'streaming')";
const UNFINISHED_OPERATIONS = "status in ('planned', 'sent')";

/** NUL cannot be stored in PostgreSQL text; where text is shown, not kept exact, it becomes U+FFFD. */
const shown = (value: string): string => value.replaceAll("\u0000", "\uFFFD");

function createPostgresTables(client: pg.PoolClient): Tables {
  // Named statements are parsed once per connection.
  const query = async (
    name: string,
    source: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<Row>> => client.query<Row>({ name, text: source, values });
  const one = async (name: string, source: string, values: unknown[]): Promise<Row | null> =>
    (await query(name, source, values)).rows[0] ?? null;

  return {
    async readHead(conversationID) {
      const row = await one(
        "readHead",
        "select version, message_count, chain_hash, last_message_hash from conversations " +
          "where conversation_id = $1",
        [conversationID],
      );
      return row === null
        ? null
        : {
            version: int(row, "version"),
            messageCount: int(row, "message_count"),
            chainHash: text(row, "chain_hash"),
            lastMessageHash: text(row, "last_message_hash"),
          };
    },
    async readConversation(conversationID) {
      const row = await one(
        "readConversation",
        "select * from conversations where conversation_id = $1",
        [conversationID],
      );
      return row === null ? null : toConversationRow(row);
    },
    async readMessages(conversationID) {
      const result = await query(
        "readMessages",
        "select seq, json, hash, chain_hash from messages where conversation_id = $1 order by seq",
        [conversationID],
      );
      return result.rows.map(toMessageRow);
    },
    async insertConversation(row) {
      const result = await query(
        "insertConversation",
        "insert into conversations (conversation_id, version, message_count, chain_hash, " +
          "last_message_hash, state_json, created_at, updated_at) " +
          "values ($1, 1, $2, $3, $4, $5, $6, $7) on conflict (conversation_id) do nothing",
        [
          row.conversationID,
          row.messageCount,
          row.chainHash,
          row.lastMessageHash,
          row.stateJSON,
          row.createdAt,
          row.updatedAt,
        ],
      );
      return result.rowCount === 1;
    },
    async updateConversation(row, expectedVersion) {
      const result = await query(
        "updateConversation",
        "update conversations set version = version + 1, message_count = $1, chain_hash = $2, " +
          "last_message_hash = $3, state_json = $4, updated_at = $5 " +
          "where conversation_id = $6 and version = $7",
        [
          row.messageCount,
          row.chainHash,
          row.lastMessageHash,
          row.stateJSON,
          row.updatedAt,
          row.conversationID,
          expectedVersion,
        ],
      );
      return result.rowCount === 1;
    },
    async appendMessages(conversationID, rows) {
      if (rows.length === 0) return;
      await query(
        "appendMessages",
        "insert into messages (conversation_id, seq, json, hash, chain_hash) " +
          "select $1, * from unnest($2::bigint[], $3::text[], $4::text[], $5::text[])",
        [
          conversationID,
          rows.map((row) => row.seq),
          rows.map((row) => row.json),
          rows.map((row) => row.hash),
          rows.map((row) => row.chainHash),
        ],
      );
    },

    async readInputCommit(conversationID, inputID) {
      const row = await one(
        "readInputCommit",
        "select * from input_commits where conversation_id = $1 and input_id = $2",
        [conversationID, inputID],
      );
      return row === null
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
    async insertInputCommit(row) {
      await query(
        "insertInputCommit",
        "insert into input_commits (conversation_id, input_id, version, message_count, " +
          "chain_hash, result_json, committed_at) values ($1, $2, $3, $4, $5, $6, $7)",
        [
          row.conversationID,
          row.inputID,
          row.version,
          row.messageCount,
          row.chainHash,
          row.resultJSON,
          row.committedAt,
        ],
      );
    },

    async readLLMCall(callID) {
      const row = await one("readLLMCall", "select * from llm_calls where call_id = $1", [callID]);
      return row === null ? null : toLLMCallRow(row);
    },
    async insertLLMCall(row) {
      await query(
        "insertLLMCall",
        "insert into llm_calls (call_id, conversation_id, turn_id, model, request, " +
          "request_hash, messages_hash, message_count, last_message_hash, status, created_at, " +
          "updated_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        [
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
        ],
      );
    },
    async updateLLMCallStatus(callID, status, updatedAt) {
      await query(
        "updateLLMCallStatus",
        "update llm_calls set status = $1, updated_at = $2 where call_id = $3",
        [status, updatedAt, callID],
      );
    },

    async readClientOperation(operationID) {
      const row = await one(
        "readClientOperation",
        "select * from client_operations where operation_id = $1",
        [operationID],
      );
      return row === null ? null : toClientOperationRow(row);
    },
    async insertClientOperation(row) {
      await query(
        "insertClientOperation",
        "insert into client_operations (operation_id, conversation_id, turn_id, tool_call_id, " +
          "request_json, status, result_json, created_at, updated_at) " +
          "values ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        [
          row.operationID,
          row.conversationID,
          row.turnID,
          row.toolCallID,
          row.requestJSON,
          row.status,
          row.resultJSON,
          row.createdAt,
          row.updatedAt,
        ],
      );
    },
    async updateClientOperation(operationID, status, resultJSON, updatedAt) {
      await query(
        "updateClientOperation",
        "update client_operations set status = $1, result_json = $2, updated_at = $3 " +
          "where operation_id = $4",
        [status, resultJSON, updatedAt, operationID],
      );
    },

    async listUnfinishedLLMCalls(conversationID) {
      const result =
        conversationID === null
          ? await query(
              "unfinishedCalls",
              `select * from llm_calls where ${UNFINISHED_CALLS} order by created_at, call_id`,
            )
          : await query(
              "unfinishedCallsOf",
              `select * from llm_calls where ${UNFINISHED_CALLS} and conversation_id = $1 ` +
                "order by created_at, call_id",
              [conversationID],
            );
      return result.rows.map(toLLMCallRow);
    },
    async listUnfinishedClientOperations(conversationID) {
      const result =
        conversationID === null
          ? await query(
              "unfinishedOperations",
              `select * from client_operations where ${UNFINISHED_OPERATIONS} ` +
                "order by created_at, operation_id",
            )
          : await query(
              "unfinishedOperationsOf",
              `select * from client_operations where ${UNFINISHED_OPERATIONS} ` +
                "and conversation_id = $1 order by created_at, operation_id",
              [conversationID],
            );
      return result.rows.map(toClientOperationRow);
    },

    async readImage(hash) {
      const row = await one("readImage", "select data from images where hash = $1", [hash]);
      return row === null ? null : text(row, "data");
    },
    async insertImage(hash, data) {
      await query(
        "insertImage",
        "insert into images (hash, data) values ($1, $2) on conflict do nothing",
        [hash, data],
      );
    },

    async readRequestStream(requestID) {
      const row = await one(
        "readRequestStream",
        "select request_id, conversation_id, turn_id, client_state, created_at " +
          "from request_streams where request_id = $1",
        [requestID],
      );
      if (row === null) return null;
      const bytes = row.client_state as Buffer | null;
      return {
        requestID: text(row, "request_id"),
        conversationID: text(row, "conversation_id"),
        turnID: optionalText(row, "turn_id"),
        clientState: bytes === null ? null : new Uint8Array(bytes),
        createdAt: int(row, "created_at"),
      };
    },
    async insertRequestStream(row) {
      await query(
        "insertRequestStream",
        "insert into request_streams (request_id, conversation_id, turn_id, client_state, " +
          "created_at) values ($1, $2, $3, $4, $5)",
        [
          row.requestID,
          row.conversationID,
          row.turnID,
          row.clientState === null ? null : Buffer.from(row.clientState),
          row.createdAt,
        ],
      );
    },

    async readSummary(conversationID) {
      const row = await one(
        "readSummary",
        "select * from conversation_summaries where conversation_id = $1",
        [conversationID],
      );
      return row === null ? null : toSummaryRow(row);
    },
    async writeSummary(row) {
      const title = shown(row.title);
      await query(
        "writeSummary",
        "insert into conversation_summaries (conversation_id, title, title_search, model, " +
          "provider, status, turns, model_calls, message_count, input, output, cache_read, " +
          "cache_write, cost, created_at, updated_at) " +
          "values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) " +
          "on conflict (conversation_id) do update set title = excluded.title, " +
          "title_search = excluded.title_search, model = excluded.model, " +
          "provider = excluded.provider, status = excluded.status, turns = excluded.turns, " +
          "model_calls = excluded.model_calls, message_count = excluded.message_count, " +
          "input = excluded.input, output = excluded.output, cache_read = excluded.cache_read, " +
          "cache_write = excluded.cache_write, cost = excluded.cost, " +
          "created_at = excluded.created_at, updated_at = excluded.updated_at",
        [
          row.conversationID,
          title,
          shown(`${row.title.toLowerCase()}\n${row.conversationID.toLowerCase()}`),
          shown(row.model),
          shown(row.provider),
          row.status,
          row.turns,
          row.modelCalls,
          row.messageCount,
          row.input,
          row.output,
          row.cacheRead,
          row.cacheWrite,
          row.cost,
          row.createdAt,
          row.updatedAt,
        ],
      );
    },
    async insertCallUsage(row) {
      await query(
        "insertCallUsage",
        "insert into call_usage (conversation_id, seq, call_id, provider, model, day, input, " +
          "output, cache_read, cache_write, cost, committed_at) " +
          "values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        [
          row.conversationID,
          row.seq,
          row.callID,
          shown(row.provider),
          shown(row.model),
          row.day,
          row.input,
          row.output,
          row.cacheRead,
          row.cacheWrite,
          row.cost,
          row.committedAt,
        ],
      );
    },
    async addDailyUsage(row) {
      await query(
        "addDailyUsage",
        "insert into daily_usage as d (day, provider, model, calls, input, output, cache_read, " +
          "cache_write, cost) values ($1, $2, $3, $4, $5, $6, $7, $8, $9) " +
          "on conflict (day, provider, model) do update set calls = d.calls + excluded.calls, " +
          "input = d.input + excluded.input, output = d.output + excluded.output, " +
          "cache_read = d.cache_read + excluded.cache_read, " +
          "cache_write = d.cache_write + excluded.cache_write, cost = d.cost + excluded.cost",
        [
          row.day,
          shown(row.provider),
          shown(row.model),
          row.calls,
          row.input,
          row.output,
          row.cacheRead,
          row.cacheWrite,
          row.cost,
        ],
      );
    },
    async insertFirstEvent(callID, at) {
      await query(
        "insertFirstEvent",
        "insert into llm_call_first_events (call_id, at) values ($1, $2) on conflict do nothing",
        [callID, at],
      );
    },
    async listSummaries(search, after, limit, count) {
      const from = after ?? { updatedAt: Number.MAX_SAFE_INTEGER, conversationID: "" };
      const result = await query(
        "listSummaries",
        "select * from conversation_summaries " +
          "where ($1 = '' or strpos(title_search, $1) > 0) " +
          "and (updated_at, conversation_id) < ($2, $3) " +
          "order by updated_at desc, conversation_id desc limit $4",
        [shown(search), from.updatedAt, from.conversationID, limit],
      );
      let total: number | null = null;
      if (count) {
        const counted = await one(
          "countSummaries",
          "select count(*) as n from conversation_summaries " +
            "where ($1 = '' or strpos(title_search, $1) > 0)",
          [shown(search)],
        );
        total = counted === null ? 0 : int(counted, "n");
      }
      return { rows: result.rows.map(toSummaryRow), total };
    },
    async readMessagesFrom(conversationID, fromSeq, limit) {
      const result = await query(
        "readMessagesFrom",
        "select seq, json, hash, chain_hash from messages where conversation_id = $1 " +
          "and seq >= $2 order by seq limit $3",
        [conversationID, fromSeq, limit],
      );
      return result.rows.map(toMessageRow);
    },
    async listCallsOf(conversationID) {
      const result = await query(
        "listCallsOf",
        "select c.call_id, c.turn_id, c.model, c.status, c.request_hash, " +
          "octet_length(c.request) as request_bytes, c.message_count, c.created_at, " +
          "c.updated_at, f.at as first_event_at from llm_calls c " +
          "left join llm_call_first_events f using (call_id) " +
          "where c.conversation_id = $1 order by c.created_at, c.call_id",
        [conversationID],
      );
      return result.rows.map(
        (row): CallListRow => ({
          callID: text(row, "call_id"),
          turnID: text(row, "turn_id"),
          model: text(row, "model"),
          status: text(row, "status") as LLMCallStatus,
          requestHash: text(row, "request_hash"),
          requestBytes: int(row, "request_bytes"),
          messageCount: int(row, "message_count"),
          createdAt: int(row, "created_at"),
          updatedAt: int(row, "updated_at"),
          firstEventAt: row.first_event_at === null ? null : int(row, "first_event_at"),
        }),
      );
    },
    async listCallUsageOf(conversationID) {
      const result = await query(
        "listCallUsageOf",
        "select * from call_usage where conversation_id = $1 order by seq",
        [conversationID],
      );
      return result.rows.map(
        (row): CallUsageRow => ({
          conversationID: text(row, "conversation_id"),
          seq: int(row, "seq"),
          callID: optionalText(row, "call_id"),
          provider: text(row, "provider"),
          model: text(row, "model"),
          day: text(row, "day"),
          input: int(row, "input"),
          output: int(row, "output"),
          cacheRead: int(row, "cache_read"),
          cacheWrite: int(row, "cache_write"),
          cost: int(row, "cost"),
          committedAt: int(row, "committed_at"),
        }),
      );
    },
    async listOperationsOf(conversationID) {
      const result = await query(
        "listOperationsOf",
        "select * from client_operations where conversation_id = $1 " +
          "order by created_at, operation_id",
        [conversationID],
      );
      return result.rows.map(toClientOperationRow);
    },
    async listDailyUsage(fromDay, toDay) {
      const result = await query(
        "listDailyUsage",
        "select * from daily_usage where day >= $1 and day <= $2 order by day, provider, model",
        [fromDay, toDay],
      );
      return result.rows.map(
        (row): DailyUsageRow => ({
          day: text(row, "day"),
          provider: text(row, "provider"),
          model: text(row, "model"),
          calls: int(row, "calls"),
          input: int(row, "input"),
          output: int(row, "output"),
          cacheRead: int(row, "cache_read"),
          cacheWrite: int(row, "cache_write"),
          cost: int(row, "cost"),
        }),
      );
    },
  };
}

function toMessageRow(row: Row): MessageRow {
  return {
    seq: int(row, "seq"),
    json: text(row, "json"),
    hash: text(row, "hash"),
    chainHash: text(row, "chain_hash"),
  };
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
  return {
    operationID: text(row, "operation_id"),
    conversationID: text(row, "conversation_id"),
    turnID: text(row, "turn_id"),
    toolCallID: text(row, "tool_call_id"),
    requestJSON: text(row, "request_json"),
    status: text(row, "status") as ClientOperationStatus,
    resultJSON: optionalText(row, "result_json"),
    createdAt: int(row, "created_at"),
    updatedAt: int(row, "updated_at"),
  };
}

function toSummaryRow(row: Row): SummaryRow {
  return {
    conversationID: text(row, "conversation_id"),
    title: text(row, "title"),
    model: text(row, "model"),
    provider: text(row, "provider"),
    status: text(row, "status"),
    turns: int(row, "turns"),
    modelCalls: int(row, "model_calls"),
    messageCount: int(row, "message_count"),
    input: int(row, "input"),
    output: int(row, "output"),
    cacheRead: int(row, "cache_read"),
    cacheWrite: int(row, "cache_write"),
    cost: int(row, "cost"),
    createdAt: int(row, "created_at"),
    updatedAt: int(row, "updated_at"),
  };
}

function sqlState(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : null;
}

const KEPT = "Everything committed before is kept; the failed change was not written.";

/** A driver or server failure as a `StoreError` naming the database; anything else unchanged. */
export function fromPostgresError(error: unknown, location: string): unknown {
  if (error instanceof StoreError) return error;
  if (!(error instanceof Error)) return error;
  const state = sqlState(error);
  const network = (error as { code?: unknown }).code;
  const [code, advice] = toCodeAndAdvice(
    state,
    typeof network === "string" ? network : "",
    location,
  );
  if (code === null) return error;
  // The server's message names tables and values, never the connection's password.
  return new StoreError(code, location, `${advice} (PostgreSQL: ${error.message})`, error);
}

function toCodeAndAdvice(
  state: string | null,
  network: string,
  location: string,
): [StoreErrorCode | null, string] {
  if (state === null) {
    if (/^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|EHOSTUNREACH)$/.test(network)) {
      return [
        "cannot_open",
        `Cannot reach ${location}. Check that PostgreSQL runs there and the URL is right.`,
      ];
    }
    return [null, ""];
  }
  if (state.startsWith("08") || state === "57P01" || state === "57P03") {
    return ["cannot_open", `The connection to ${location} failed; retry when it is back. ${KEPT}`];
  }
  if (state === "28P01" || state === "28000" || state === "3D000" || state === "42501") {
    return [
      "cannot_open",
      `${location} refused the connection (user, password, database or privileges). Check the URL.`,
    ];
  }
  if (
    state === "57014" ||
    state === "55P03" ||
    state === "40001" ||
    state === "40P01" ||
    state === "23505"
  ) {
    return [
      "busy",
      `${location} did not finish in time or stayed contended (statement time-out, lock or ` +
        `retried conflicts). Retry. ${KEPT}`,
    ];
  }
  if (state === "53100") {
    return ["disk_full", `${location} is out of disk space. Free some, then retry. ${KEPT}`];
  }
  if (state === "25006") {
    return ["read_only", `${location} is read-only (a standby?). Point the URL at the primary.`];
  }
  if (state === "22021" || state === "22P05") {
    return [
      "invalid_argument",
      `Text with a NUL character cannot be stored in ${location}; nothing was written.`,
    ];
  }
  return ["database_error", `The database ${location} failed. ${KEPT}`];
}
