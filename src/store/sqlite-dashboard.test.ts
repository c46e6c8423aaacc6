/**
 * The dashboard's SQLite statements use their indexes: SQLite's own query plans show a SEARCH
 * (no SCAN of a table, no temporary B-tree for sorting) for the list, a page after a cursor,
 * usage and a conversation's detail; and a call's request size is read without its body.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { test } from "node:test";
import { migrate } from "./schema.ts";
import { prepareDashboardStatements } from "./sqlite-dashboard.ts";

function withStatements(
  check: (db: DatabaseSync, statements: ReturnType<typeof prepareDashboardStatements>) => void,
): void {
  const db = new DatabaseSync(":memory:");
  try {
    migrate(db);
    check(
      db,
      prepareDashboardStatements((source) => db.prepare(source)),
    );
  } finally {
    db.close();
  }
}

const planOf = (db: DatabaseSync, source: string): string[] =>
  db
    .prepare(`explain query plan ${source}`)
    .all()
    .map((row) => String(row.detail));

test("list, page after a cursor, usage and detail statements SEARCH their indexes", () => {
  withStatements((db, statements) => {
    for (const name of [
      "listSummaries",
      "listDailyUsage",
      "readSummary",
      "listCallsOf",
      "listCallUsageOf",
      "listOperationsOf",
      "readMessagesFrom",
    ] as const) {
      const plan = planOf(db, statements[name].sourceSQL);
      assert.ok(plan.length > 0, name);
      for (const step of plan) {
        assert.match(step, /^SEARCH /, `${name}: ${plan.join("; ")}`);
        assert.doesNotMatch(step, /TEMP B-TREE/, `${name}: ${plan.join("; ")}`);
      }
    }
    assert.match(
      planOf(db, statements.listSummaries.sourceSQL).join(),
      /conversation_summaries USING INDEX conversation_summaries_recent \(\(updated_at,conversation_id\)<\(\?,\?\)\)/,
    );
  });
});

test("a conversation's calls read each request's stored size, not the request", () => {
  withStatements((db, statements) => {
    // Column 4 of llm_calls is `request`; SQLite marks a column read only for its size with
    // OPFLAG_BYTELENARG (0xc0) in p5, and then does not load the value's overflow pages.
    const reads = db
      .prepare(`explain ${statements.listCallsOf.sourceSQL}`)
      .all()
      .filter((op) => op.opcode === "Column" && Number(op.p2) === 4);
    assert.ok(reads.length > 0);
    for (const op of reads) assert.equal(Number(op.p5) & 0xc0, 0xc0);
  });
});
