/**
 * The SQLite side of the dashboard's tables (tables.ts, migration 4 in schema.ts). Every listing
 * is one statement over an index: the conversation list searches `conversation_summaries_recent`
 * from the cursor, so a page costs the same with ten or ten thousand conversations; the count
 * (first page only) and the search scan only the summaries, never messages.
 */

import type { StatementSync } from "node:sqlite";
import { int, text, toSummaryRow } from "./row-mapping.ts";
import type {
  CallListRow,
  CallUsageRow,
  ClientOperationRow,
  DailyUsageRow,
  MessageRow,
  SyncTables,
} from "./tables.ts";
import type { ClientOperationStatus, LLMCallStatus } from "./types.ts";

type Statements = ReturnType<typeof prepareDashboardStatements>;
type DashboardTables = Pick<
  SyncTables,
  | "readSummary"
  | "writeSummary"
  | "insertCallUsage"
  | "addDailyUsage"
  | "insertFirstEvent"
  | "listSummaries"
  | "readMessagesFrom"
  | "listCallsOf"
  | "listCallUsageOf"
  | "listOperationsOf"
  | "listDailyUsage"
>;

const MATCH = "(? = '' or instr(title_search, ?) > 0)";
/**
 * A row-value comparison, so SQLite SEARCHes `conversation_summaries_recent` from the position
 * instead of scanning it (`sqlite-dashboard.test.ts` checks the plans). The first page starts
 * after `FIRST_POSITION`, which every real row precedes.
 */
const AFTER = "(updated_at, conversation_id) < (?, ?)";
const FIRST_POSITION = { updatedAt: Number.MAX_SAFE_INTEGER, conversationID: "" };

export function prepareDashboardStatements(sql: (source: string) => StatementSync) {
  return {
    readSummary: sql("select * from conversation_summaries where conversation_id = ?"),
    writeSummary: sql(
      "insert or replace into conversation_summaries (conversation_id, title, title_search, " +
        "model, provider, status, turns, model_calls, message_count, input, output, cache_read, " +
        "cache_write, cost, created_at, updated_at) " +
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ),
    insertCallUsage: sql(
      "insert into call_usage (conversation_id, seq, call_id, provider, model, day, input, " +
        "output, cache_read, cache_write, cost, committed_at) " +
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ),
    addDailyUsage: sql(
      "insert into daily_usage (day, provider, model, calls, input, output, cache_read, " +
        "cache_write, cost) values (?, ?, ?, ?, ?, ?, ?, ?, ?) " +
        "on conflict (day, provider, model) do update set calls = calls + excluded.calls, " +
        "input = input + excluded.input, output = output + excluded.output, " +
        "cache_read = cache_read + excluded.cache_read, " +
        "cache_write = cache_write + excluded.cache_write, cost = cost + excluded.cost",
    ),
    insertFirstEvent: sql(
      "insert into llm_call_first_events (call_id, at) values (?, ?) on conflict do nothing",
    ),
    listSummaries: sql(
      `select * from conversation_summaries where ${MATCH} and ${AFTER} ` +
        "order by updated_at desc, conversation_id desc limit ?",
    ),
    countSummaries: sql("select count(*) as n from conversation_summaries"),
    countMatchingSummaries: sql(
      "select count(*) as n from conversation_summaries where instr(title_search, ?) > 0",
    ),
    readMessagesFrom: sql(
      "select seq, json, hash, chain_hash from messages where conversation_id = ? and seq >= ? " +
        "order by seq limit ?",
    ),
    listCallsOf: sql(
      "select c.call_id, c.turn_id, c.model, c.status, c.request_hash, " +
        // octet_length of a column reads its stored size, not the body (SQLite >= 3.43).
        "octet_length(c.request) as request_bytes, c.message_count, c.created_at, " +
        "c.updated_at, f.at as first_event_at from llm_calls c " +
        "left join llm_call_first_events f using (call_id) " +
        "where c.conversation_id = ? order by c.created_at, c.call_id",
    ),
    listCallUsageOf: sql("select * from call_usage where conversation_id = ? order by seq"),
    listOperationsOf: sql(
      "select * from client_operations where conversation_id = ? order by created_at, operation_id",
    ),
    listDailyUsage: sql(
      "select * from daily_usage where day >= ? and day <= ? order by day, provider, model",
    ),
  };
}

export function createDashboardTables(statements: Statements): DashboardTables {
  return {
    readSummary(conversationID) {
      const row = statements.readSummary.get(conversationID);
      return row === undefined ? null : toSummaryRow(row);
    },
    writeSummary(row) {
      statements.writeSummary.run(
        row.conversationID,
        row.title,
        `${row.title.toLowerCase()}\n${row.conversationID.toLowerCase()}`,
        row.model,
        row.provider,
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
      );
    },
    insertCallUsage(row) {
      statements.insertCallUsage.run(
        row.conversationID,
        row.seq,
        row.callID,
        row.provider,
        row.model,
        row.day,
        row.input,
        row.output,
        row.cacheRead,
        row.cacheWrite,
        row.cost,
        row.committedAt,
      );
    },
    addDailyUsage(row) {
      statements.addDailyUsage.run(
        row.day,
        row.provider,
        row.model,
        row.calls,
        row.input,
        row.output,
        row.cacheRead,
        row.cacheWrite,
        row.cost,
      );
    },
    insertFirstEvent(callID, at) {
      statements.insertFirstEvent.run(callID, at);
    },
    listSummaries(search, after, limit, count) {
      const from = after ?? FIRST_POSITION;
      const rows = statements.listSummaries.all(
        search,
        search,
        from.updatedAt,
        from.conversationID,
        limit,
      );
      const counted = !count
        ? undefined
        : search === ""
          ? statements.countSummaries.get()
          : statements.countMatchingSummaries.get(search);
      return {
        rows: rows.map(toSummaryRow),
        total: counted === undefined ? null : int(counted, "n"),
      };
    },
    readMessagesFrom(conversationID, fromSeq, limit) {
      return statements.readMessagesFrom.all(conversationID, fromSeq, limit).map(
        (row): MessageRow => ({
          seq: int(row, "seq"),
          json: text(row, "json"),
          hash: text(row, "hash"),
          chainHash: text(row, "chain_hash"),
        }),
      );
    },
    listCallsOf(conversationID) {
      return statements.listCallsOf.all(conversationID).map(
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
    listCallUsageOf(conversationID) {
      return statements.listCallUsageOf.all(conversationID).map(
        (row): CallUsageRow => ({
          conversationID: text(row, "conversation_id"),
          seq: int(row, "seq"),
          callID: row.call_id === null ? null : text(row, "call_id"),
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
    listOperationsOf(conversationID) {
      return statements.listOperationsOf.all(conversationID).map(
        (row): ClientOperationRow => ({
          operationID: text(row, "operation_id"),
          conversationID: text(row, "conversation_id"),
          turnID: text(row, "turn_id"),
          toolCallID: text(row, "tool_call_id"),
          requestJSON: text(row, "request_json"),
          status: text(row, "status") as ClientOperationStatus,
          resultJSON: row.result_json === null ? null : text(row, "result_json"),
          createdAt: int(row, "created_at"),
          updatedAt: int(row, "updated_at"),
        }),
      );
    },
    listDailyUsage(fromDay, toDay) {
      return statements.listDailyUsage.all(fromDay, toDay).map(
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
