/**
 * The team's users in the PostgreSQL store (users.ts, migrations 5 and 9 of postgres-schema.ts).
 * Every token check reads the database, so a revoked token is refused by every instance from the
 * next request on; it is one indexed lookup of the token's hash. A budget check and the call's
 * reservation are one transaction under a per-user advisory lock, so concurrent calls of one user
 * on any instance are admitted one after the other, each seeing the others' reservations.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { StoreError } from "./errors.ts";
import { createPool, fromPostgresError, toPostgresLocation } from "./postgres-store.ts";
import { toDay } from "./summaries.ts";
import {
  type Budget,
  type BudgetPeriod,
  type CallReservation,
  createAccessToken,
  hashAccessToken,
  PROVIDER_ID,
  RESERVATION_LIFETIME_MS,
  REVOKED_MESSAGE,
  toBudgetVerdict,
  toMonthStart,
  toUserKeyVariableProblem,
  USER_NAME,
  type UserKey,
  type UserRecord,
  type Users,
  type UserUsage,
} from "./users.ts";

/**
 * The usage figures of one user this UTC day and month: settled, and reserved by open calls (a
 * reservation whose call gave no sign of life for `RESERVATION_LIFETIME_MS` — `held_at`,
 * migration 10 — belongs to a call whose instance died: no longer held).
 */
const USAGE_SQL =
  "select " +
  "coalesce(sum(tokens) filter (where day = $2), 0)::text as day_tokens, " +
  "coalesce(sum(cost) filter (where day = $2), 0)::text as day_cost, " +
  "coalesce(sum(reserved_tokens) filter (where day = $2 and settled_at is null and coalesce(held_at, created_at) > $4), 0)::text as day_reserved_tokens, " +
  "coalesce(sum(reserved_cost) filter (where day = $2 and settled_at is null and coalesce(held_at, created_at) > $4), 0)::text as day_reserved_cost, " +
  "coalesce(sum(tokens), 0)::text as month_tokens, " +
  "coalesce(sum(cost), 0)::text as month_cost, " +
  "coalesce(sum(reserved_tokens) filter (where settled_at is null and coalesce(held_at, created_at) > $4), 0)::text as month_reserved_tokens, " +
  "coalesce(sum(reserved_cost) filter (where settled_at is null and coalesce(held_at, created_at) > $4), 0)::text as month_reserved_cost " +
  "from user_calls where user_id = $1 and day >= $3";

function toUsage(row: Record<string, string> | undefined): Record<BudgetPeriod, UserUsage> {
  const figure = (name: string) => Number(row?.[name] ?? 0);
  const of = (period: "day" | "month"): UserUsage => ({
    tokens: figure(`${period}_tokens`),
    cost: figure(`${period}_cost`),
    reservedTokens: figure(`${period}_reserved_tokens`),
    reservedCost: figure(`${period}_reserved_cost`),
  });
  return { day: of("day"), month: of("month") };
}

/** Whole, non-negative, finite tokens and cost: a provider's odd figures never fail a write. */
function toAmounts(call: CallReservation): [number, number] {
  const tokens = Number.isFinite(call.tokens) && call.tokens > 0 ? Math.round(call.tokens) : 0;
  const cost = Number.isFinite(call.cost) && call.cost > 0 ? call.cost : 0;
  return [Math.min(tokens, 2 ** 52), cost];
}

/**
 * Retention (docs/team.md "Retention"). `stream_users` gains a row per agent stream (one per turn)
 * and `user_calls` one per model call; neither is read once old, so old rows are deleted, as
 * `stream_owners` drops old claims (postgres-cluster.ts):
 *
 * - a stream's owner, `STREAM_OWNER_KEPT_MS` after it was bound, unless the stream can still be
 *   picked up (its request's binding keeps a saved run request: store/request-streams.ts). A
 *   stream that cannot is answered `stream_released` whoever asks, so forgetting its owner
 *   grants nothing; and its id is a client-made UUID nobody else knows;
 * - the ledger's rows of days before the first day of the month `LEDGER_KEPT_MONTHS - 1` months
 *   back: budgets read this UTC day and month only (`USAGE_SQL`). A reservation that old lapsed
 *   long ago (`RESERVATION_LIFETIME_MS`).
 *
 * Each instance prunes `PRUNE_FIRST_MS` after it opens and then every `PRUNE_EVERY_MS`, in
 * batches of `PRUNE_BATCH` rows (deleting twice is harmless), never failing a request.
 */
export const STREAM_OWNER_KEPT_MS = 30 * 24 * 60 * 60 * 1000;
export const LEDGER_KEPT_MONTHS = 3;
const PRUNE_FIRST_MS = 60 * 1000;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
const PRUNE_BATCH = 5_000;

/** The first day kept by the ledger's retention at `now` (UTC, `YYYY-MM-DD`). */
export function toLedgerKeptFrom(now: number): string {
  const at = new Date(now);
  return toDay(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() - (LEDGER_KEPT_MONTHS - 1), 1));
}

/** What one pruning deleted. */
export interface Pruned {
  readonly streamOwners: number;
  readonly ledgerRows: number;
}

export interface PostgresUsers extends Users {
  /** Deletes the rows retention no longer keeps at `now` (above); what the timer runs. */
  prune(now: number): Promise<Pruned>;
}

export function openPostgresUsers(options: {
  readonly url: string;
  readonly poolSize?: number;
  readonly statementTimeoutMs?: number;
  /** Whether this instance prunes old rows on its own timer (above). Default true. */
  readonly prune?: boolean;
  /** Told when a timed pruning fails (for the log); it is tried again at the next tick. */
  readonly onPruneFailure?: (error: unknown) => void;
  /** The first pruning's delay after opening; `PRUNE_FIRST_MS` unless given (tests). */
  readonly pruneFirstMs?: number;
}): PostgresUsers {
  // The store's default (10) unless given: every request's token is looked up here.
  const pool = createPool(options);
  const location = toPostgresLocation(options.url);
  const query = async <R extends pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> => {
    try {
      return await pool.query<R>(text, values);
    } catch (error) {
      throw fromPostgresError(error, location);
    }
  };
  const budgetsOf = async (userIDs: readonly string[]): Promise<Map<string, Budget[]>> => {
    const rows = await query<{
      user_id: string;
      period: BudgetPeriod;
      max_tokens: string | null;
      max_cost: number | null;
    }>("select * from user_budgets where user_id = any($1::text[]) order by period", [userIDs]);
    const budgets = new Map<string, Budget[]>();
    for (const row of rows.rows) {
      const list = budgets.get(row.user_id) ?? [];
      list.push({
        period: row.period,
        maxTokens: row.max_tokens === null ? null : Number(row.max_tokens),
        maxCost: row.max_cost,
      });
      budgets.set(row.user_id, list);
    }
    return budgets;
  };
  const usageOf = async (userID: string, now: number, client?: pg.PoolClient) => {
    const values = [userID, toDay(now), toMonthStart(now), now - RESERVATION_LIFETIME_MS];
    try {
      const result =
        client === undefined
          ? await query<Record<string, string>>(USAGE_SQL, values)
          : await client.query<Record<string, string>>(USAGE_SQL, values);
      return toUsage(result.rows[0]);
    } catch (error) {
      throw fromPostgresError(error, location);
    }
  };
  const userIDOf = async (name: string): Promise<string | undefined> =>
    (await query<{ user_id: string }>("select user_id from users where name = $1", [name])).rows[0]
      ?.user_id;
  const keysOf = async (userIDs: readonly string[]): Promise<Map<string, UserKey[]>> => {
    const rows = await query<{ user_id: string; provider: string; env_name: string }>(
      "select user_id, provider, env_name from user_keys where user_id = any($1::text[]) " +
        "order by provider",
      [userIDs],
    );
    const keys = new Map<string, UserKey[]>();
    for (const row of rows.rows) {
      keys.set(row.user_id, [
        ...(keys.get(row.user_id) ?? []),
        { provider: row.provider, env: row.env_name },
      ]);
    }
    return keys;
  };
  /** Binds `id` in `table` to the user unless bound; answers the user it is bound to. */
  const bind = async (
    table: "conversation_users" | "stream_users",
    column: "conversation_id" | "request_id",
    id: string,
    userID: string | null,
    now: number,
  ): Promise<string | null> => {
    const result = await query<{ user_id: string | null }>(
      `with inserted as (insert into ${table} (${column}, user_id, created_at) values ($1, $2, $3) ` +
        `on conflict (${column}) do nothing returning user_id) ` +
        `select user_id from inserted union all select user_id from ${table} where ${column} = $1`,
      [id, userID, now],
    );
    const bound = result.rows[0];
    if (bound !== undefined) return bound.user_id;
    // Another statement inserted the id first: ours waited for its commit and did nothing, but our
    // select still read the snapshot taken before that commit (READ COMMITTED), so it saw no row.
    // A new statement has a new snapshot and sees the committed owner. Never answer `userID` here:
    // both users would be told the id is theirs.
    const again = await query<{ user_id: string | null }>(
      `select user_id from ${table} where ${column} = $1`,
      [id],
    );
    const owner = again.rows[0];
    if (owner === undefined) {
      throw new StoreError(
        "invalid_argument",
        location,
        `The owner of ${id} could not be read after binding it; nothing was granted. Try again.`,
      );
    }
    return owner.user_id;
  };
  const invalid = (detail: string) =>
    new StoreError("invalid_argument", location, `${detail}; nothing was changed.`);
  /** Deletes the rows `select` names, `PRUNE_BATCH` at a time, until none is left. */
  const deleteInBatches = async (
    table: "stream_users" | "user_calls",
    key: "request_id" | "call_id",
    where: string,
    values: unknown[],
  ): Promise<number> => {
    let deleted = 0;
    for (;;) {
      const result = await query(
        `delete from ${table} where ${key} in ` +
          `(select ${key} from ${table} where ${where} limit ${PRUNE_BATCH})`,
        values,
      );
      deleted += result.rowCount ?? 0;
      if ((result.rowCount ?? 0) < PRUNE_BATCH) return deleted;
    }
  };
  const prune = async (now: number): Promise<Pruned> => ({
    streamOwners: await deleteInBatches(
      "stream_users",
      "request_id",
      "created_at < $1 and not exists (select 1 from request_streams r " +
        "where r.request_id = stream_users.request_id and r.client_state is not null)",
      [now - STREAM_OWNER_KEPT_MS],
    ),
    ledgerRows: await deleteInBatches("user_calls", "call_id", "day < $1", [toLedgerKeptFrom(now)]),
  });
  let pruning: NodeJS.Timeout | undefined;
  if (options.prune !== false) {
    const run = () => {
      void prune(Date.now()).catch((error: unknown) => options.onPruneFailure?.(error));
      pruning = setTimeout(run, PRUNE_EVERY_MS);
      pruning.unref();
    };
    pruning = setTimeout(run, options.pruneFirstMs ?? PRUNE_FIRST_MS);
    pruning.unref();
  }

  return {
    async add(name) {
      if (!USER_NAME.test(name)) {
        throw invalid(
          `A user name is 1 to 64 letters, digits, ".", "_", "@" or "-", starting with a letter or digit`,
        );
      }
      const token = createAccessToken();
      const user: UserRecord = {
        userID: randomUUID(),
        name,
        createdAt: Date.now(),
        revokedAt: null,
        budgets: [],
      };
      const inserted = await query(
        "insert into users (user_id, name, token_hash, created_at) values ($1, $2, $3, $4) " +
          "on conflict (name) do nothing",
        [user.userID, name, hashAccessToken(token), user.createdAt],
      );
      if (inserted.rowCount !== 1) throw invalid(`A user named ${name} exists already`);
      return { user, token };
    },

    async list(now) {
      const rows = await query<{
        user_id: string;
        name: string;
        created_at: string;
        revoked_at: string | null;
      }>("select user_id, name, created_at, revoked_at from users order by name");
      const ids = rows.rows.map((row) => row.user_id);
      const [budgets, keys] = await Promise.all([budgetsOf(ids), keysOf(ids)]);
      const listed = [];
      for (const row of rows.rows) {
        const usage = await usageOf(row.user_id, now);
        listed.push({
          userID: row.user_id,
          name: row.name,
          createdAt: Number(row.created_at),
          revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
          budgets: budgets.get(row.user_id) ?? [],
          keys: keys.get(row.user_id) ?? [],
          today: usage.day,
          month: usage.month,
        });
      }
      return listed;
    },

    async revoke(name, now) {
      const result = await query(
        "update users set revoked_at = $2 where name = $1 and revoked_at is null",
        [name, now],
      );
      return result.rowCount === 1;
    },

    async setBudget(name, budget) {
      for (const [what, value] of [
        ["tokens", budget.maxTokens],
        ["cost", budget.maxCost],
      ] as const) {
        if (value !== null && !(Number.isFinite(value) && value >= 0)) {
          throw invalid(`A ${what} budget must be a non-negative number`);
        }
      }
      const userID = await userIDOf(name);
      if (userID === undefined) return false;
      if (budget.maxTokens === null && budget.maxCost === null) {
        await query("delete from user_budgets where user_id = $1 and period = $2", [
          userID,
          budget.period,
        ]);
        return true;
      }
      await query(
        "insert into user_budgets (user_id, period, max_tokens, max_cost) values ($1, $2, $3, $4) " +
          "on conflict (user_id, period) do update set max_tokens = excluded.max_tokens, " +
          "max_cost = excluded.max_cost",
        [userID, budget.period, budget.maxTokens, budget.maxCost],
      );
      return true;
    },

    async authenticate(token) {
      const result = await query<{ user_id: string; name: string }>(
        "select user_id, name from users where token_hash = $1 and revoked_at is null",
        [hashAccessToken(token)],
      );
      const row = result.rows[0];
      return row === undefined ? null : { userID: row.user_id, name: row.name };
    },

    bindConversation: (conversationID, userID, now) =>
      bind("conversation_users", "conversation_id", conversationID, userID, now),

    bindStream: (requestID, userID, now) =>
      bind("stream_users", "request_id", requestID, userID, now),

    async ownerOf(conversationID) {
      const result = await query<{ user_id: string | null }>(
        "select user_id from conversation_users where conversation_id = $1",
        [conversationID],
      );
      return result.rows[0]?.user_id ?? null;
    },

    async checkBudget(userID, now) {
      const [budgets, names] = await Promise.all([
        budgetsOf([userID]),
        query<{ name: string }>("select name from users where user_id = $1", [userID]),
      ]);
      const list = budgets.get(userID) ?? [];
      if (list.length === 0) return { type: "ok" };
      const usage = await usageOf(userID, now);
      return toBudgetVerdict(names.rows[0]?.name ?? userID, list, usage, now);
    },

    async reserve(call, now) {
      const [tokens, cost] = toAmounts(call);
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw fromPostgresError(error, location);
      }
      try {
        await client.query("begin");
        // One user's admissions, on every instance, one at a time.
        await client.query("select pg_advisory_xact_lock(hashtextextended($1, 0))", [
          `cursor-byok-user:${call.userID}`,
        ]);
        // A user revoked while their turn runs starts no new call (the request that began it was
        // authenticated before).
        const user = await client.query<{ name: string }>(
          "select name from users where user_id = $1 and revoked_at is null",
          [call.userID],
        );
        if (user.rows.length === 0) {
          await client.query("rollback");
          return { type: "revoked", message: REVOKED_MESSAGE };
        }
        const budgets = await client.query<{
          period: BudgetPeriod;
          max_tokens: string | null;
          max_cost: number | null;
          name: string;
        }>(
          "select period, max_tokens, max_cost, name from user_budgets join users using (user_id) " +
            "where user_id = $1 order by period",
          [call.userID],
        );
        if (budgets.rows.length > 0) {
          const verdict = toBudgetVerdict(
            budgets.rows[0]?.name ?? call.userID,
            budgets.rows.map((row) => ({
              period: row.period,
              maxTokens: row.max_tokens === null ? null : Number(row.max_tokens),
              maxCost: row.max_cost,
            })),
            await usageOf(call.userID, now, client),
            now,
          );
          if (verdict.type === "exceeded") {
            await client.query("rollback");
            return verdict;
          }
        }
        await client.query(
          "insert into user_calls (call_id, user_id, conversation_id, day, reserved_tokens, " +
            "reserved_cost, created_at, held_at) values ($1, $2, $3, $4, $5, $6, $7, $7) " +
            "on conflict (call_id) do nothing",
          [call.callID, call.userID, call.conversationID, toDay(now), tokens, cost, now],
        );
        await client.query("commit");
        return { type: "ok" };
      } catch (error) {
        await client.query("rollback").catch(() => {});
        throw fromPostgresError(error, location);
      } finally {
        client.release();
      }
    },

    async isActive(userID) {
      const result = await query("select 1 from users where user_id = $1 and revoked_at is null", [
        userID,
      ]);
      return result.rows.length === 1;
    },

    async hold(callID, now) {
      await query(
        "update user_calls set held_at = greatest(coalesce(held_at, created_at), $2) " +
          "where call_id = $1 and settled_at is null",
        [callID, now],
      );
    },

    async settle(call, now) {
      const [tokens, cost] = toAmounts(call);
      // Each attempt writes its own row, and only that row: the reserved attempt its call's row
      // (replacing the reservation), a replay one keyed by its attempt. So a replay never
      // overwrites a settled call, and a settlement written again (a retry) changes nothing.
      const rowID =
        call.replayID === undefined ? call.callID : `${call.callID}~replay~${call.replayID}`;
      await query(
        "insert into user_calls (call_id, user_id, conversation_id, day, reserved_tokens, " +
          "reserved_cost, tokens, cost, created_at, settled_at) " +
          "values ($1, $2, $3, $4, 0, 0, $5, $6, $7, $7) " +
          "on conflict (call_id) do update set tokens = excluded.tokens, cost = excluded.cost, " +
          "settled_at = excluded.settled_at",
        [rowID, call.userID, call.conversationID, toDay(now), tokens, cost, now],
      );
    },

    async setKey(name, provider, env) {
      if (!PROVIDER_ID.test(provider)) {
        throw invalid(
          `"${provider}" is not a provider id (as models name it: openai, anthropic, …)`,
        );
      }
      const problem = env === null ? null : toUserKeyVariableProblem(env);
      if (problem !== null) throw invalid(problem);
      const userID = await userIDOf(name);
      if (userID === undefined) return false;
      if (env === null) {
        await query("delete from user_keys where user_id = $1 and provider = $2", [
          userID,
          provider,
        ]);
        return true;
      }
      await query(
        "insert into user_keys (user_id, provider, env_name) values ($1, $2, $3) " +
          "on conflict (user_id, provider) do update set env_name = excluded.env_name",
        [userID, provider, env],
      );
      return true;
    },

    async keysOf(userID) {
      return (await keysOf([userID])).get(userID) ?? [];
    },

    prune,

    close: () => {
      clearTimeout(pruning);
      return pool.end();
    },
  };
}
