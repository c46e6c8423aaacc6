/**
 * Migration 4's backfill (schema.ts): the dashboard's rows of conversations committed before it,
 * derived by the very code every commit runs (`planSummary`), so an upgraded file has the
 * figures, titles and search text a store that saw every commit has: the title from the first
 * user message with text, whitespace collapsed, Unicode lower-casing for search, the store-clock
 * day for a message without a usable timestamp. One pass over the conversations, reading one
 * conversation's messages at a time, inside the migration's transaction.
 */
import type { DatabaseSync } from "node:sqlite";
import type { ConversationState, Message } from "../loop/types.ts";
import { createDashboardTables, prepareDashboardStatements } from "./sqlite-dashboard.ts";
import { planSummary } from "./summaries.ts";

export function backfillDashboard(db: DatabaseSync): void {
  const tables = createDashboardTables(prepareDashboardStatements((source) => db.prepare(source)));
  const messages = db.prepare("select json from messages where conversation_id = ? order by seq");
  const conversations = db
    .prepare(
      "select conversation_id, state_json, created_at, updated_at from conversations " +
        "order by conversation_id",
    )
    .all();
  for (const row of conversations) {
    const conversationID = String(row.conversation_id);
    const saved = parse(String(row.state_json)) as Partial<ConversationState> | null;
    const history = messages
      .all(conversationID)
      .map((message) => parse(String(message.json)) as Message);
    // As of its last commit, which is also the clock a message without a timestamp counts at.
    const writes = planSummary(
      tables.readSummary(conversationID),
      {
        conversationID,
        status: saved?.status ?? "ready",
        settings: saved?.settings ?? null,
        messages: history,
        ...(typeof saved?.copied === "number" ? { copied: saved.copied } : {}),
      },
      history.length,
      [],
      Number(row.updated_at),
      Number(row.created_at),
    );
    for (const usage of writes.callUsage) tables.insertCallUsage(usage);
    for (const usage of writes.dailyUsage) tables.addDailyUsage(usage);
    tables.writeSummary(writes.summary);
  }
}

/** Stored JSON is the store's own canonical text; anything else counts as nothing. */
function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
