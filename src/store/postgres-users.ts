/**
 * The team's users in the PostgreSQL store (users.ts, migration 5 of postgres-schema.ts). Every
 * token check reads the database, so a revoked token is refused by every instance from the next
 * request on; it is one indexed lookup of the token's hash.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { StoreError } from "./errors.ts";
import { createPool, fromPostgresError, toPostgresLocation } from "./postgres-store.ts";
import { toDay } from "./summaries.ts";
import {
  type Budget,
  type BudgetPeriod,
  createAccessToken,
  hashAccessToken,
  toBudgetVerdict,
  toMonthStart,
  USER_NAME,
  type UserRecord,
  type Users,
} from "./users.ts";

export function openPostgresUsers(options: {
  readonly url: string;
  readonly poolSize?: number;
  readonly statementTimeoutMs?: number;
}): Users {
  const pool = createPool({ ...options, poolSize: options.poolSize ?? 4 });
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
  const usageOf = async (userID: string, now: number) => {
    const result = await query<Record<string, string>>(
      "select coalesce(sum(input + output + cache_read + cache_write) filter (where day = $2), 0)::text as day_tokens, " +
        "coalesce(sum(cost) filter (where day = $2), 0)::text as day_cost, " +
        "coalesce(sum(input + output + cache_read + cache_write), 0)::text as month_tokens, " +
        "coalesce(sum(cost), 0)::text as month_cost " +
        "from call_usage join conversation_users using (conversation_id) " +
        "where user_id = $1 and day >= $3",
      [userID, toDay(now), toMonthStart(now)],
    );
    const row = result.rows[0] ?? {};
    return {
      day: { tokens: Number(row.day_tokens ?? 0), cost: Number(row.day_cost ?? 0) },
      month: { tokens: Number(row.month_tokens ?? 0), cost: Number(row.month_cost ?? 0) },
    };
  };
  const invalid = (detail: string) =>
    new StoreError("invalid_argument", location, `${detail}; nothing was changed.`);

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
      const budgets = await budgetsOf(rows.rows.map((row) => row.user_id));
      const listed = [];
      for (const row of rows.rows) {
        const usage = await usageOf(row.user_id, now);
        listed.push({
          userID: row.user_id,
          name: row.name,
          createdAt: Number(row.created_at),
          revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
          budgets: budgets.get(row.user_id) ?? [],
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
      const user = await query<{ user_id: string }>("select user_id from users where name = $1", [
        name,
      ]);
      const userID = user.rows[0]?.user_id;
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

    async bindConversation(conversationID, userID, now) {
      await query(
        "insert into conversation_users (conversation_id, user_id, created_at) values ($1, $2, $3) " +
          "on conflict (conversation_id) do nothing",
        [conversationID, userID, now],
      );
    },

    async ownerOf(conversationID) {
      const result = await query<{ user_id: string }>(
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

    close: () => pool.end(),
  };
}
