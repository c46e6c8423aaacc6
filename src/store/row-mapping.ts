/**
 * One row of either SQL backend as the `Tables` contract's row types (tables.ts). Both backends
 * select the same column names; PostgreSQL returns `bigint` columns as strings and SQLite
 * returns numbers, so every number goes through `Number` and every text through `String`.
 */
import type {
  ClientOperationRow,
  ConversationRow,
  LLMCallRow,
  MessageRow,
  SummaryRow,
} from "./tables.ts";
import type { ClientOperationStatus, LLMCallStatus } from "./types.ts";

export type Row = Readonly<Record<string, unknown>>;

export const text = (row: Row, column: string): string => String(row[column]);
export const int = (row: Row, column: string): number => Number(row[column]);
export const optionalText = (row: Row, column: string): string | null =>
  row[column] === null || row[column] === undefined ? null : String(row[column]);

export function toMessageRow(row: Row): MessageRow {
  return {
    seq: int(row, "seq"),
    json: text(row, "json"),
    hash: text(row, "hash"),
    chainHash: text(row, "chain_hash"),
  };
}

export function toConversationRow(row: Row): ConversationRow {
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

export function toLLMCallRow(row: Row): LLMCallRow {
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

export function toClientOperationRow(row: Row): ClientOperationRow {
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

export function toSummaryRow(row: Row): SummaryRow {
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
