/**
 * The PostgreSQL schema: the SQLite schema (schema.ts) migration for migration, in PostgreSQL's
 * words, so both stores hold the same rows and the same guarantees: messages, call usage and
 * request-stream bindings are append-only (triggers refuse UPDATE, DELETE and TRUNCATE; since
 * migration 11, a binding's saved client state alone may be set to null), a saved model request
 * or client-operation request is never changed, a completed operation has a result.
 *
 * `cursor_byok_schema` lists the migrations applied; a database holding our tables without it is
 * another program's. Migrations run at open (and by `cursor-byok db migrate`), each in one
 * transaction under a transaction-level advisory lock, so several instances starting at once
 * apply each migration exactly once. Identifiers and the texts the dashboard orders by use the
 * "C" collation: byte order, as SQLite's `binary` orders them, whatever the database's locale.
 */
import type { PoolClient } from "pg";
import { fromVersion4State } from "./request-streams-backfill.ts";

export interface PostgresMigration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  /** Runs after `sql`, in the same transaction: rows moved by TypeScript code. */
  readonly backfill?: (client: PoolClient) => Promise<void>;
}

/** Arbitrary, fixed: the advisory lock key under which migrations run ("cbyk"). */
export const MIGRATION_LOCK_KEY = 0x6362796b;

const refuse = (table: string, name: string, message: string, events = "update or delete") => `
  create trigger ${name} before ${events} on ${table}
    for each row execute function cursor_byok_refuse('${message}');
  create trigger ${name}_truncate before truncate on ${table}
    for each statement execute function cursor_byok_refuse('${message}');`;

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: "conversations, append-only messages, input commits, model calls, client operations",
    sql: `
      create function cursor_byok_refuse() returns trigger language plpgsql as $$
      begin
        raise exception using errcode = 'P0001', message = tg_argv[0];
      end
      $$;

      create table conversations (
        conversation_id text collate "C" primary key,
        version bigint not null check (version >= 1),
        message_count bigint not null check (message_count >= 0),
        chain_hash text not null,
        last_message_hash text not null,
        state_json text not null,
        created_at bigint not null,
        updated_at bigint not null
      );

      create table messages (
        conversation_id text collate "C" not null references conversations (conversation_id),
        seq bigint not null check (seq >= 0),
        json text not null,
        hash text not null,
        chain_hash text not null,
        primary key (conversation_id, seq)
      );
      ${refuse("messages", "messages_append_only", "messages are append-only: a stored message is never changed or deleted")}

      create table input_commits (
        conversation_id text collate "C" not null references conversations (conversation_id),
        input_id text collate "C" not null,
        version bigint not null,
        message_count bigint not null,
        chain_hash text not null,
        result_json text not null,
        committed_at bigint not null,
        primary key (conversation_id, input_id)
      );

      create table llm_calls (
        call_id text collate "C" primary key,
        conversation_id text collate "C" not null references conversations (conversation_id),
        turn_id text not null,
        model text not null,
        request text not null,
        request_hash text not null,
        messages_hash text not null,
        message_count bigint not null,
        last_message_hash text not null,
        status text not null
          check (status in ('planned', 'streaming', 'committed', 'failed', 'canceled')),
        created_at bigint not null,
        updated_at bigint not null
      );

      create index llm_calls_unfinished on llm_calls (created_at, call_id)
        where status in ('planned', 'streaming');

      create trigger llm_calls_request_fixed
        before update of call_id, conversation_id, request, request_hash, messages_hash,
          message_count, last_message_hash on llm_calls
        for each row execute function cursor_byok_refuse('a saved model request is never changed');

      create table client_operations (
        operation_id text collate "C" primary key,
        conversation_id text collate "C" not null references conversations (conversation_id),
        turn_id text not null,
        tool_call_id text not null,
        request_json text not null,
        status text not null check (status in ('planned', 'sent', 'completed', 'canceled')),
        result_json text,
        created_at bigint not null,
        updated_at bigint not null,
        check ((status = 'completed') = (result_json is not null))
      );

      create index client_operations_unfinished on client_operations (created_at, operation_id)
        where status in ('planned', 'sent');

      create trigger client_operations_request_fixed
        before update of operation_id, conversation_id, request_json on client_operations
        for each row execute function
          cursor_byok_refuse('a saved client operation request is never changed');
    `,
  },
  {
    version: 2,
    name: "stream diagnostics",
    sql: `
      create table stream_diagnostics (
        id bigint generated always as identity primary key,
        call_id text collate "C" not null references llm_calls (call_id),
        at bigint not null,
        kind text not null,
        detail_json text not null
      );

      create index stream_diagnostics_call on stream_diagnostics (call_id, id);
    `,
  },
  {
    version: 3,
    name: "request streams: the conversation of a client's agent stream",
    sql: `
      create table request_streams (
        request_id text collate "C" primary key,
        conversation_id text collate "C" not null references conversations (conversation_id),
        client_state text,
        created_at bigint not null
      );

      create index request_streams_conversation on request_streams (conversation_id);
      ${refuse("request_streams", "request_streams_fixed", "a request stream stays bound to its conversation")}
    `,
  },
  {
    version: 4,
    name: "dashboard: conversation summaries, per-call usage and timing, daily usage",
    // No backfill: a PostgreSQL database starts at this schema or later, never at version 3
    // with rows in it (the SQLite backfill exists for files written before the dashboard).
    sql: `
      create table conversation_summaries (
        conversation_id text collate "C" primary key
          references conversations (conversation_id),
        title text not null,
        title_search text not null,
        model text not null,
        provider text not null,
        status text not null,
        turns bigint not null,
        model_calls bigint not null,
        message_count bigint not null,
        input bigint not null,
        output bigint not null,
        cache_read bigint not null,
        cache_write bigint not null,
        cost double precision not null,
        created_at bigint not null,
        updated_at bigint not null
      );

      create index conversation_summaries_recent
        on conversation_summaries (updated_at desc, conversation_id desc);

      create table call_usage (
        conversation_id text collate "C" not null references conversations (conversation_id),
        seq bigint not null,
        call_id text collate "C",
        provider text collate "C" not null,
        model text collate "C" not null,
        day text collate "C" not null,
        input bigint not null,
        output bigint not null,
        cache_read bigint not null,
        cache_write bigint not null,
        cost double precision not null,
        committed_at bigint not null,
        primary key (conversation_id, seq)
      );
      ${refuse("call_usage", "call_usage_written_once", "call usage is written once with the message it describes", "update")}

      create table daily_usage (
        day text collate "C" not null,
        provider text collate "C" not null,
        model text collate "C" not null,
        calls bigint not null,
        input bigint not null,
        output bigint not null,
        cache_read bigint not null,
        cache_write bigint not null,
        cost double precision not null,
        primary key (day, provider, model)
      );

      create index llm_calls_conversation on llm_calls (conversation_id, created_at, call_id);

      create index client_operations_conversation
        on client_operations (conversation_id, created_at, operation_id);

      create table llm_call_first_events (
        call_id text collate "C" primary key references llm_calls (call_id),
        at bigint not null
      );
    `,
  },
  {
    version: 5,
    name: "users: hashed access tokens, budgets, the user of each conversation (PostgreSQL only)",
    // The team's users exist only in the team store. PostgreSQL's migration numbers are their
    // own sequence: a SQLite migration added later is mirrored here under the next free number.
    sql: `
      create table users (
        user_id text collate "C" primary key,
        name text collate "C" not null unique,
        token_hash text not null unique,
        created_at bigint not null,
        revoked_at bigint
      );

      create table user_budgets (
        user_id text collate "C" not null references users (user_id),
        period text not null check (period in ('day', 'month')),
        max_tokens bigint check (max_tokens >= 0),
        max_cost double precision check (max_cost >= 0),
        primary key (user_id, period)
      );

      create table conversation_users (
        conversation_id text collate "C" primary key,
        user_id text collate "C" not null references users (user_id),
        created_at bigint not null
      );

      create index conversation_users_user on conversation_users (user_id, conversation_id);
      create index call_usage_conversation_day on call_usage (conversation_id, day);
    `,
  },
  {
    version: 6,
    name: "instances and the owner of each agent stream (several instances, PostgreSQL only)",
    // An instance's lease is its heartbeat: it owns its streams while its heartbeat is fresh
    // (postgres-cluster.ts), so one write per instance keeps all its leases.
    sql: `
      create table instances (
        instance_id text collate "C" primary key,
        url text not null,
        started_at bigint not null,
        heartbeat_at bigint not null
      );

      create table stream_owners (
        request_id text collate "C" primary key,
        instance_id text collate "C" not null,
        claimed_at bigint not null
      );

      create index stream_owners_claimed on stream_owners (claimed_at);
    `,
  },
  {
    version: 7,
    name: "request streams keep the turn and the client state in typed columns; no stream diagnostics (SQLite's 5)",
    backfill: backfillRequestStreams,
    sql: `
      drop table stream_diagnostics;

      alter table request_streams rename to request_streams_v4;
      alter index request_streams_pkey rename to request_streams_v4_pkey;

      create table request_streams (
        request_id text collate "C" primary key,
        conversation_id text collate "C" not null references conversations (conversation_id),
        turn_id text,
        client_state bytea,
        created_at bigint not null
      );

      create index request_streams_by_conversation on request_streams (conversation_id);
      ${refuse("request_streams", "request_streams_bound", "a request stream stays bound to its conversation")}
    `,
  },
  {
    version: 8,
    name: "images stored once, by hash (SQLite's 6)",
    sql: `
      create table images (
        hash text collate "C" primary key,
        data text not null
      );
      ${refuse("images", "images_fixed", "images are stored once: a stored image is never changed")}
    `,
  },
  {
    version: 9,
    name: "users: own provider keys (variable names only), the user of each agent stream, a ledger of model calls with reservations (PostgreSQL only)",
    // The ledger starts with what was counted before: the committed usage of each user's
    // conversations. Helper calls (titles, commit messages) were bound, wrongly, to the first
    // user who made one: those bindings go (each call now counts for the user who asked).
    sql: `
      create table user_keys (
        user_id text collate "C" not null references users (user_id),
        provider text collate "C" not null,
        env_name text not null check (env_name ~ '^[A-Za-z_][A-Za-z0-9_]*$'),
        primary key (user_id, provider)
      );

      create table stream_users (
        request_id text collate "C" primary key,
        user_id text collate "C" not null references users (user_id),
        created_at bigint not null
      );

      create table user_calls (
        call_id text collate "C" primary key,
        user_id text collate "C" not null references users (user_id),
        conversation_id text collate "C" not null,
        day text collate "C" not null,
        reserved_tokens bigint not null check (reserved_tokens >= 0),
        reserved_cost double precision not null check (reserved_cost >= 0),
        tokens bigint check (tokens >= 0),
        cost double precision check (cost >= 0),
        created_at bigint not null,
        settled_at bigint,
        check ((settled_at is null) = (tokens is null) and (tokens is null) = (cost is null))
      );

      create index user_calls_user_day on user_calls (user_id, day);

      delete from conversation_users where conversation_id like 'cursor-byok-helper-%';

      insert into user_calls (call_id, user_id, conversation_id, day, reserved_tokens,
          reserved_cost, tokens, cost, created_at, settled_at)
        select coalesce(call_id, 'committed:' || conversation_id || ':' || seq), user_id,
          conversation_id, day, 0, 0, input + output + cache_read + cache_write, cost,
          committed_at, committed_at
        from call_usage join conversation_users using (conversation_id)
        on conflict (call_id) do nothing;
    `,
  },
  {
    version: 10,
    name: "users: a reservation is held from its call's last sign of life (held_at); streams and conversations of the admin (null user), every existing one bound",
    // A running call refreshes \`held_at\` (llm/gated-llm.ts); a reservation no longer counts once
    // \`held_at\` is older than the lifetime. Rows written before count from their creation.
    //
    // A null user is the admin's (docs/team.md "Whose stream, whose conversation"): no user may
    // take it. Every stream and conversation already stored is bound now, so none goes to the
    // first user who names it: a stream to its conversation's user, a subagent's conversation
    // (\`<root>~task~<digest>\`) to its root's, anything else (the admin's, from before users,
    // helper pseudo-conversations) to the admin.
    sql: `
      alter table user_calls add column held_at bigint;
      update user_calls set held_at = created_at where settled_at is null;

      alter table conversation_users alter column user_id drop not null;
      alter table stream_users alter column user_id drop not null;

      insert into conversation_users (conversation_id, user_id, created_at)
        select c.conversation_id,
          (select r.user_id from conversation_users r
            where r.conversation_id = split_part(c.conversation_id, '~task~', 1)),
          c.created_at
        from conversations c
        on conflict (conversation_id) do nothing;

      insert into stream_users (request_id, user_id, created_at)
        select s.request_id, u.user_id, s.created_at
        from request_streams s left join conversation_users u using (conversation_id)
        on conflict (request_id) do nothing;
    `,
  },
  {
    version: 11,
    name: "request streams: a binding's saved client state may be released (set to null) (SQLite's 7)",
    // request-streams.ts: binding a new stream releases the saved state of the conversation's
    // earlier ones. Everything else about a binding stays fixed; deleting and truncating stay
    // refused (the truncate trigger of migration 7 is kept). Bindings saved before are released
    // by the same rule as SQLite's 7: each stream bound to a turn other than its conversation's
    // current one (a state that is not JSON releases nothing; a binding without a turn stays).
    // The release finds the streams still holding a state by a partial index.
    sql: `
      drop trigger request_streams_bound on request_streams;

      create trigger request_streams_bound before update on request_streams
        for each row when (new.request_id is distinct from old.request_id
          or new.conversation_id is distinct from old.conversation_id
          or new.turn_id is distinct from old.turn_id
          or new.created_at is distinct from old.created_at
          or new.client_state is not null)
        execute function cursor_byok_refuse('a request stream stays bound to its conversation; only its saved client state may be released');

      create trigger request_streams_not_deleted before delete on request_streams
        for each row execute function cursor_byok_refuse('a request stream stays bound to its conversation');

      -- An ordinary function, dropped below: one in pg_temp would need the TEMP privilege, which
      -- hardened databases take from application roles.
      create function cursor_byok_turn_of(state text) returns text language plpgsql as $$
      begin
        return state::jsonb ->> 'turnID';
      exception when others then
        return null;
      end
      $$;

      update request_streams s set client_state = null
      from conversations c
      where c.conversation_id = s.conversation_id
        and s.client_state is not null and s.turn_id is not null
        and s.turn_id <> coalesce(cursor_byok_turn_of(c.state_json), s.turn_id);

      drop function cursor_byok_turn_of(text);

      create index request_streams_saved on request_streams (conversation_id)
        where client_state is not null;
    `,
  },
  {
    version: 12,
    name: "turn blobs: the turn each checkpoint turn blob written to a client names (SQLite's 8)",
    sql: `
      create table turn_blobs (
        seq bigint generated always as identity primary key,
        blob_id bytea not null unique check (octet_length(blob_id) = 32),
        conversation_id text collate "C" not null,
        request_id text collate "C" not null
      );

      create index turn_blobs_by_request on turn_blobs (request_id, seq);
    `,
  },
];

/** Moves version-4 bindings (JSON text with a base64 client state) over, as SQLite's 5 does. */
async function backfillRequestStreams(client: PoolClient): Promise<void> {
  const rows = await client.query<{
    request_id: string;
    conversation_id: string;
    client_state: string | null;
    created_at: string;
  }>("select * from request_streams_v4 order by request_id");
  for (const row of rows.rows) {
    const saved = fromVersion4State(row.client_state);
    await client.query(
      "insert into request_streams (request_id, conversation_id, turn_id, client_state, " +
        "created_at) values ($1, $2, $3, $4, $5)",
      [
        row.request_id,
        row.conversation_id,
        saved.turnID,
        saved.clientState === null ? null : Buffer.from(saved.clientState),
        row.created_at,
      ],
    );
  }
  await client.query("drop table request_streams_v4");
}

/** The schema version this build writes. */
export const POSTGRES_SCHEMA_VERSION = POSTGRES_MIGRATIONS.length;

export type SchemaCheck =
  | { readonly type: "ok"; readonly version: number }
  | { readonly type: "foreign" }
  | { readonly type: "newer"; readonly version: number };

/** What the database (its current schema) holds, read without writing. */
export async function readSchemaVersion(client: PoolClient): Promise<SchemaCheck> {
  const tables = await client.query<{ name: string }>(
    "select table_name as name from information_schema.tables " +
      "where table_schema = current_schema() and table_name in ('cursor_byok_schema', 'conversations')",
  );
  const names = new Set(tables.rows.map((row) => row.name));
  if (!names.has("cursor_byok_schema")) {
    return names.has("conversations") ? { type: "foreign" } : { type: "ok", version: 0 };
  }
  const version = await client.query<{ v: string | null }>(
    "select max(version)::text as v from cursor_byok_schema",
  );
  const current = Number(version.rows[0]?.v ?? 0);
  return current > POSTGRES_SCHEMA_VERSION
    ? { type: "newer", version: current }
    : { type: "ok", version: current };
}

/**
 * Applies the migrations after the database's version, each in one transaction holding the
 * migration lock (the version is re-read under it). Returns the versions it applied.
 */
export async function migratePostgres(
  client: PoolClient,
  target: number = POSTGRES_SCHEMA_VERSION,
): Promise<number[]> {
  const applied: number[] = [];
  for (const migration of POSTGRES_MIGRATIONS) {
    if (migration.version > target) break;
    await client.query("begin");
    try {
      await client.query("select pg_advisory_xact_lock($1)", [MIGRATION_LOCK_KEY]);
      await client.query(
        "create table if not exists cursor_byok_schema (version integer primary key, " +
          "name text not null, applied_at timestamptz not null default now())",
      );
      const current = await client.query<{ v: string | null }>(
        "select max(version)::text as v from cursor_byok_schema",
      );
      if (Number(current.rows[0]?.v ?? 0) < migration.version) {
        await client.query(migration.sql);
        await migration.backfill?.(client);
        await client.query("insert into cursor_byok_schema (version, name) values ($1, $2)", [
          migration.version,
          migration.name,
        ]);
        applied.push(migration.version);
      }
      await client.query("commit");
    } catch (error) {
      await client.query("rollback").catch(() => undefined);
      throw error;
    }
  }
  return applied;
}
