/**
 * The PostgreSQL store's statements and row mapping: the `Tables` of create-store.ts on one pooled
 * connection inside the transaction postgres-store.ts opened (docs/team.md). Every statement is
 * parameterised; the only interpolated fragments are the constant status lists below.
 *
 * Why one file of about 510 lines: it is one `Tables` implementation, every statement of the
 * contract in tables.ts in its order, to be read side by side with sqlite-backend.ts.
 */
import type pg from "pg";
import { toPrefixEnd } from "./id-prefix.ts";
import {
  int,
  optionalText,
  type Row,
  text,
  toClientOperationRow,
  toConversationRow,
  toLLMCallRow,
  toMessageRow,
  toSummaryRow,
} from "./row-mapping.ts";
import type {
  CallListRow,
  CallUsageRow,
  ConversationHead,
  DailyUsageRow,
  Tables,
} from "./tables.ts";
import type { LLMCallStatus } from "./types.ts";

const UNFINISHED_CALLS = "status in ('planned', 'streaming')";
const UNFINISHED_OPERATIONS = "status in ('planned', 'sent')";

/** NUL cannot be stored in PostgreSQL text; where text is shown, not kept exact, it becomes U+FFFD. */
const shown = (value: string): string => value.replaceAll("\u0000", "\uFFFD");

function toHead(row: Row): ConversationHead {
  return {
    version: int(row, "version"),
    messageCount: int(row, "message_count"),
    chainHash: text(row, "chain_hash"),
    lastMessageHash: text(row, "last_message_hash"),
  };
}

export function createPostgresTables(client: pg.PoolClient): Tables {
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
      return row === null ? null : toHead(row);
    },
    async lockHead(conversationID) {
      // `for update`: a concurrent commit's conditional update of this row waits for this
      // transaction, then sees the version it leaves (unchanged by a binding).
      const row = await one(
        "lockHead",
        "select version, message_count, chain_hash, last_message_hash from conversations " +
          "where conversation_id = $1 for update",
        [conversationID],
      );
      return row === null ? null : toHead(row);
    },
    async readNewestConversationID(prefix, without) {
      // `conversation_id` is `collate "C"`: byte order, so the range is one of its index.
      const row = await one(
        "readNewestConversationID",
        "select conversation_id from conversations " +
          "where conversation_id >= $1 and conversation_id < $2 " +
          "and strpos(substr(conversation_id, length($1) + 1), $3) = 0 " +
          "order by created_at desc, conversation_id desc limit 1",
        [prefix, toPrefixEnd(prefix), without],
      );
      return row === null ? null : text(row, "conversation_id");
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
    async releaseRequestStreams(conversationID, keepRequestID) {
      // By the partial index `request_streams_saved`: only rows still holding a state are read.
      await query(
        "releaseRequestStreams",
        "update request_streams set client_state = null " +
          "where conversation_id = $1 and request_id <> $2 and client_state is not null",
        [conversationID, keepRequestID],
      );
    },

    async insertTurnBlob(row) {
      await query(
        "insertTurnBlob",
        "insert into turn_blobs (blob_id, conversation_id, request_id) values ($1, $2, $3) " +
          "on conflict (blob_id) do nothing",
        [Buffer.from(row.blobID, "hex"), row.conversationID, row.requestID],
      );
    },
    async readTurnBlob(blobID) {
      const row = await one(
        "readTurnBlob",
        "select conversation_id, request_id from turn_blobs where blob_id = $1",
        [Buffer.from(blobID, "hex")],
      );
      return row === null
        ? null
        : {
            blobID,
            conversationID: text(row, "conversation_id"),
            requestID: text(row, "request_id"),
          };
    },
    async readTurnBlobsOf(requestID) {
      // By `turn_blobs_by_request`.
      const result = await query(
        "readTurnBlobsOf",
        "select blob_id, conversation_id from turn_blobs where request_id = $1 order by seq desc",
        [requestID],
      );
      return result.rows.map((row) => ({
        blobID: Buffer.from(row.blob_id as Uint8Array).toString("hex"),
        conversationID: text(row, "conversation_id"),
        requestID,
      }));
    },
    async trimTurnBlobs(requestID, keep) {
      // By `turn_blobs_by_request`: the rows of one request older than its `keep`-th newest.
      await query(
        "trimTurnBlobs",
        "delete from turn_blobs where request_id = $1 and seq < (select seq from turn_blobs " +
          "where request_id = $1 order by seq desc limit 1 offset $2)",
        [requestID, keep - 1],
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
