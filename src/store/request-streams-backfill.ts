/**
 * Migration 5's backfill (schema.ts): request-stream bindings saved before it kept the turn and
 * the client's state as one text, the JSON `{"turnID": …, "client": <base64> | null}` the runner
 * wrote. They move into the typed columns `turn_id` (text) and `client_state` (BLOB) of the new
 * table; a text that is not that JSON keeps neither, as the runner read it then (no turn to match,
 * so nothing to resume). Then the old table goes.
 */
import type { DatabaseSync } from "node:sqlite";

export function backfillRequestStreams(db: DatabaseSync): void {
  const insert = db.prepare(
    "insert into request_streams (request_id, conversation_id, turn_id, client_state, created_at) " +
      "values (?, ?, ?, ?, ?)",
  );
  const rows = db
    .prepare(
      "select request_id, conversation_id, client_state, created_at from request_streams_v4 " +
        "order by request_id",
    )
    .all();
  for (const row of rows) {
    const saved = fromVersion4State(row.client_state);
    insert.run(
      String(row.request_id),
      String(row.conversation_id),
      saved.turnID,
      saved.clientState,
      Number(row.created_at),
    );
  }
  db.exec("drop table request_streams_v4");
}

/** The turn and client state in a version-4 `client_state` text. */
export function fromVersion4State(text: unknown): {
  readonly turnID: string | null;
  readonly clientState: Uint8Array | null;
} {
  const none = { turnID: null, clientState: null };
  if (typeof text !== "string") return none;
  let saved: unknown;
  try {
    saved = JSON.parse(text);
  } catch {
    return none;
  }
  if (typeof saved !== "object" || saved === null) return none;
  const { turnID, client } = saved as { turnID?: unknown; client?: unknown };
  return {
    turnID: typeof turnID === "string" ? turnID : null,
    clientState: typeof client === "string" ? new Uint8Array(Buffer.from(client, "base64")) : null,
  };
}
