/**
 * The SQLite schema as numbered migrations. The file's `user_version` is the number of
 * migrations applied; `application_id` marks the file as ours, so another program's database is
 * never mistaken for an empty one. Each migration runs in its own transaction, so a crash leaves
 * the file at the previous version, never in between. Migrations are only ever appended.
 */
import type { DatabaseSync } from "node:sqlite";
import { backfillDashboard } from "./dashboard-backfill.ts";
import { backfillRequestStreams } from "./request-streams-backfill.ts";

/** "cbyk": the SQLite `application_id` of a cursor-byok database. */
export const APPLICATION_ID = 0x6362796b;

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /** Runs after `sql`, in the same transaction: rows derived by TypeScript code. */
  readonly backfill?: (db: DatabaseSync) => void;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "conversations, append-only messages, input commits, model calls, client operations",
    sql: `
      create table conversations (
        conversation_id text primary key,
        version integer not null check (version >= 1),
        message_count integer not null check (message_count >= 0),
        chain_hash text not null,
        last_message_hash text not null,
        state_json text not null,
        created_at integer not null,
        updated_at integer not null
      ) strict;

      create table messages (
        conversation_id text not null references conversations (conversation_id),
        seq integer not null check (seq >= 0),
        json text not null,
        hash text not null,
        chain_hash text not null,
        primary key (conversation_id, seq)
      ) strict;

      create trigger messages_no_update before update on messages
      begin
        select raise(abort, 'messages are append-only: a stored message is never changed');
      end;

      create trigger messages_no_delete before delete on messages
      begin
        select raise(abort, 'messages are append-only: a stored message is never deleted');
      end;

      create table input_commits (
        conversation_id text not null references conversations (conversation_id),
        input_id text not null,
        version integer not null,
        message_count integer not null,
        chain_hash text not null,
        result_json text not null,
        committed_at integer not null,
        primary key (conversation_id, input_id)
      ) strict;

      create table llm_calls (
        call_id text primary key,
        conversation_id text not null references conversations (conversation_id),
        turn_id text not null,
        model text not null,
        request text not null,
        request_hash text not null,
        messages_hash text not null,
        message_count integer not null,
        last_message_hash text not null,
        status text not null
          check (status in ('planned', 'streaming', 'committed', 'failed', 'canceled')),
        created_at integer not null,
        updated_at integer not null
      ) strict;

      create index llm_calls_unfinished on llm_calls (created_at, call_id)
        where status in ('planned', 'streaming');

      create trigger llm_calls_request_fixed
      before update of call_id, conversation_id, request, request_hash, messages_hash,
        message_count, last_message_hash on llm_calls
      begin
        select raise(abort, 'a saved model request is never changed');
      end;

      create table client_operations (
        operation_id text primary key,
        conversation_id text not null references conversations (conversation_id),
        turn_id text not null,
        tool_call_id text not null,
        request_json text not null,
        status text not null check (status in ('planned', 'sent', 'completed', 'canceled')),
        result_json text,
        created_at integer not null,
        updated_at integer not null,
        check ((status = 'completed') = (result_json is not null))
      ) strict;

      create index client_operations_unfinished on client_operations (created_at, operation_id)
        where status in ('planned', 'sent');

      create trigger client_operations_request_fixed
      before update of operation_id, conversation_id, request_json on client_operations
      begin
        select raise(abort, 'a saved client operation request is never changed');
      end;
    `,
  },
  {
    version: 2,
    name: "stream diagnostics",
    sql: `
      create table stream_diagnostics (
        id integer primary key,
        call_id text not null references llm_calls (call_id),
        at integer not null,
        kind text not null,
        detail_json text not null
      ) strict;

      create index stream_diagnostics_call on stream_diagnostics (call_id, id);
    `,
  },
  {
    version: 3,
    name: "request streams: the conversation of a client's agent stream",
    sql: `
      create table request_streams (
        request_id text primary key,
        conversation_id text not null references conversations (conversation_id),
        client_state text,
        created_at integer not null
      ) strict;

      create index request_streams_conversation on request_streams (conversation_id);

      create trigger request_streams_fixed before update on request_streams
      begin
        select raise(abort, 'a request stream stays bound to its conversation');
      end;
    `,
  },
  {
    version: 4,
    name: "dashboard: conversation summaries, per-call usage and timing, daily usage",
    backfill: backfillDashboard,
    // Derived rows kept by every commit (summaries.ts); the backfill derives them once for
    // conversations committed before this version with the same code (dashboard-backfill.ts).
    // `title_search` is the lower-cased title and id, joined by a newline, for substring search.
    sql: `
      create table conversation_summaries (
        conversation_id text primary key references conversations (conversation_id),
        title text not null,
        title_search text not null,
        model text not null,
        provider text not null,
        status text not null,
        turns integer not null,
        model_calls integer not null,
        message_count integer not null,
        input integer not null,
        output integer not null,
        cache_read integer not null,
        cache_write integer not null,
        cost real not null,
        created_at integer not null,
        updated_at integer not null
      ) strict;

      create index conversation_summaries_recent
        on conversation_summaries (updated_at desc, conversation_id desc);

      create table call_usage (
        conversation_id text not null references conversations (conversation_id),
        seq integer not null,
        call_id text,
        provider text not null,
        model text not null,
        day text not null,
        input integer not null,
        output integer not null,
        cache_read integer not null,
        cache_write integer not null,
        cost real not null,
        committed_at integer not null,
        primary key (conversation_id, seq)
      ) strict;

      create trigger call_usage_no_update before update on call_usage
      begin
        select raise(abort, 'call usage is written once with the message it describes');
      end;

      create table daily_usage (
        day text not null,
        provider text not null,
        model text not null,
        calls integer not null,
        input integer not null,
        output integer not null,
        cache_read integer not null,
        cache_write integer not null,
        cost real not null,
        primary key (day, provider, model)
      ) strict;

      create index llm_calls_conversation on llm_calls (conversation_id, created_at, call_id);

      create index client_operations_conversation
        on client_operations (conversation_id, created_at, operation_id);

      create table llm_call_first_events (
        call_id text primary key references llm_calls (call_id),
        at integer not null
      ) strict;
    `,
  },
  {
    version: 5,
    name: "request streams keep the turn and the client state in typed columns; no stream diagnostics",
    backfill: backfillRequestStreams,
    // The old table is renamed and its rows moved over by the backfill (the JSON text with a
    // base64 client state becomes `turn_id` and BLOB `client_state`), which then drops it with
    // its index and trigger. Nothing wrote or read stream diagnostics any more.
    sql: `
      drop table stream_diagnostics;

      alter table request_streams rename to request_streams_v4;

      create table request_streams (
        request_id text primary key,
        conversation_id text not null references conversations (conversation_id),
        turn_id text,
        client_state blob,
        created_at integer not null
      ) strict;

      create index request_streams_by_conversation on request_streams (conversation_id);

      create trigger request_streams_bound before update on request_streams
      begin
        select raise(abort, 'a request stream stays bound to its conversation');
      end;
    `,
  },
  {
    version: 6,
    name: "images stored once, by hash",
    // image-refs.ts: message JSON and saved model requests refer to long base64 runs by the
    // SHA-256 of their text; rows written before keep them inline and read as they are.
    sql: `
      create table images (
        hash text primary key,
        data text not null
      ) strict;

      create trigger images_no_update before update on images
      begin
        select raise(abort, 'images are stored once: a stored image is never changed');
      end;

      create trigger images_no_delete before delete on images
      begin
        select raise(abort, 'images are stored once: a stored image is never deleted');
      end;
    `,
  },
  {
    version: 7,
    name: "request streams: a binding's saved client state may be released (set to null)",
    // request-streams.ts: binding a new stream releases the saved state of the conversation's
    // earlier ones. Everything else about a binding stays fixed, as before. Bindings saved before
    // are released by the same rule: each stream bound to a turn other than its conversation's
    // current one (a conversation state that cannot be read releases nothing; a binding without
    // a turn is left as it is). The release finds the streams still holding a state by a partial
    // index, so its cost does not grow with the conversation's turns.
    sql: `
      drop trigger request_streams_bound;

      create trigger request_streams_bound before update on request_streams
      when new.request_id is not old.request_id
        or new.conversation_id is not old.conversation_id
        or new.turn_id is not old.turn_id
        or new.created_at is not old.created_at
        or new.client_state is not null
      begin
        select raise(abort, 'a request stream stays bound to its conversation; only its saved client state may be released');
      end;

      update request_streams set client_state = null
      where client_state is not null and turn_id is not null
        and turn_id <> coalesce(
          (select case when json_valid(c.state_json) then json_extract(c.state_json, '$.turnID') end
            from conversations c where c.conversation_id = request_streams.conversation_id),
          turn_id);

      create index request_streams_saved on request_streams (conversation_id)
        where client_state is not null;
    `,
  },
  {
    version: 8,
    name: "turn blobs: the turn each checkpoint turn blob written to a client names",
    // turn-blobs.ts: written outside commits, in batches; the newest few per request id are kept
    // (`trimTurnBlobs` deletes by `turn_blobs_by_request`). `seq` (the rowid) is the write order;
    // the largest is never deleted, so it never goes back. No foreign key: a row may be written
    // before the commit that creates its conversation, and rows are never read by conversation.
    sql: `
      create table turn_blobs (
        seq integer primary key,
        blob_id blob not null unique check (length(blob_id) = 32),
        conversation_id text not null,
        request_id text not null
      ) strict;

      create index turn_blobs_by_request on turn_blobs (request_id, seq);
    `,
  },
];

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** What a file says about itself before anything is written to it. */
export interface DatabaseIdentity {
  readonly applicationID: number;
  readonly userVersion: number;
  /** Tables, indexes, views and triggers in the file. */
  readonly objectCount: number;
}

/** Reads the identity without writing. */
export function readIdentity(db: DatabaseSync): DatabaseIdentity {
  const applicationID = Number(db.prepare("pragma application_id").get()?.application_id ?? 0);
  const userVersion = Number(db.prepare("pragma user_version").get()?.user_version ?? 0);
  const objectCount = Number(db.prepare("select count(*) as n from sqlite_schema").get()?.n ?? 0);
  return { applicationID, userVersion, objectCount };
}

/**
 * Applies the migrations after the file's version, up to `target`, each in one transaction. The
 * version is re-read inside the transaction, so two processes opening the same new file apply
 * each migration once.
 */
export function migrate(db: DatabaseSync, target: number = SCHEMA_VERSION): void {
  for (const migration of MIGRATIONS) {
    if (migration.version > target) return;
    db.exec("begin immediate");
    try {
      const current = Number(db.prepare("pragma user_version").get()?.user_version ?? 0);
      if (current < migration.version) {
        db.exec(migration.sql);
        migration.backfill?.(db);
        if (migration.version === 1) db.exec(`pragma application_id = ${APPLICATION_ID}`);
        db.exec(`pragma user_version = ${migration.version}`);
      }
      db.exec("commit");
    } catch (error) {
      if (db.isTransaction) db.exec("rollback");
      throw error;
    }
  }
}
