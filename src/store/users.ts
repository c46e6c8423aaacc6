/**
 * The team's users (docs/team.md): each has an access token — only its SHA-256 is stored — and
 * optional budgets of tokens or cost per UTC day or month. A conversation belongs to the user
 * whose token started it; a user's usage is the usage of their conversations' committed model
 * calls (the dashboard's `call_usage` rows), so it is recorded by the same commits that keep the
 * history, never estimated.
 */
import { createHash, randomBytes } from "node:crypto";
import { toDay } from "./summaries.ts";

export type BudgetPeriod = "day" | "month";

export interface Budget {
  readonly period: BudgetPeriod;
  /** Every token the provider counted: input, output, cache reads and writes. `null`: no limit. */
  readonly maxTokens: number | null;
  /** USD, from the configured prices. `null`: no limit. */
  readonly maxCost: number | null;
}

export interface UserUsage {
  readonly tokens: number;
  readonly cost: number;
}

export interface UserRecord {
  readonly userID: string;
  readonly name: string;
  readonly createdAt: number;
  readonly revokedAt: number | null;
  readonly budgets: readonly Budget[];
}

export interface UserListing extends UserRecord {
  readonly today: UserUsage;
  readonly month: UserUsage;
}

export interface AuthenticatedUser {
  readonly userID: string;
  readonly name: string;
}

export type BudgetVerdict =
  | { readonly type: "ok" }
  | {
      readonly type: "exceeded";
      readonly period: BudgetPeriod;
      readonly limit: "tokens" | "cost";
      readonly used: number;
      readonly max: number;
      /** Epoch ms when the period ends (UTC). */
      readonly resetsAt: number;
      /** For the client: who, what, until when, and what to do. */
      readonly message: string;
    };

export interface Users {
  /** A new user and their token, which is shown this once and stored only as a hash. */
  add(name: string): Promise<{ user: UserRecord; token: string }>;
  list(now: number): Promise<UserListing[]>;
  /** Refuses the user's token from now on, on every instance. False: no such active user. */
  revoke(name: string, now: number): Promise<boolean>;
  /** Sets (or, with both limits null, removes) the user's budget for the period. */
  setBudget(name: string, budget: Budget): Promise<boolean>;
  /** The active user holding `token`, or null. */
  authenticate(token: string): Promise<AuthenticatedUser | null>;
  /** Records the user of a conversation; the first one stays. */
  bindConversation(conversationID: string, userID: string, now: number): Promise<void>;
  /** The user a conversation belongs to, or null. */
  ownerOf(conversationID: string): Promise<string | null>;
  /** Whether the user may start another model call now. */
  checkBudget(userID: string, now: number): Promise<BudgetVerdict>;
  close(): Promise<void>;
}

export const USER_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** A new access token: 256 random bits, recognisable by its prefix. */
export function createAccessToken(): string {
  return `cbk_${randomBytes(32).toString("base64url")}`;
}

export function hashAccessToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** `YYYY-MM-01` of the UTC month of `at`. */
export function toMonthStart(at: number): string {
  return `${toDay(at).slice(0, 7)}-01`;
}

/** The first budget the usage has reached (a limit reached counts as exceeded), or ok. */
export function toBudgetVerdict(
  name: string,
  budgets: readonly Budget[],
  usage: Readonly<Record<BudgetPeriod, UserUsage>>,
  now: number,
): BudgetVerdict {
  for (const budget of [...budgets].sort((a, b) => a.period.localeCompare(b.period))) {
    const used = usage[budget.period];
    const checks: ["tokens" | "cost", number, number | null][] = [
      ["tokens", used.tokens, budget.maxTokens],
      ["cost", used.cost, budget.maxCost],
    ];
    for (const [limit, amount, max] of checks) {
      if (max === null || amount < max) continue;
      const resetsAt = toPeriodEnd(budget.period, now);
      const figure = (value: number) =>
        limit === "tokens"
          ? `${Math.round(value).toLocaleString("en-US")} tokens`
          : `$${value.toFixed(2)}`;
      const period = budget.period === "day" ? "today" : "this month";
      return {
        type: "exceeded",
        period: budget.period,
        limit,
        used: amount,
        max,
        resetsAt,
        message:
          `Budget reached: ${name} has used ${figure(amount)} of ${figure(max)} ${period} (UTC). ` +
          `New model calls resume at ${new Date(resetsAt).toISOString().replace("T", " ").slice(0, 16)} UTC, ` +
          "or when an admin raises the budget (`cursor-byok users budget`).",
      };
    }
  }
  return { type: "ok" };
}

function toPeriodEnd(period: BudgetPeriod, now: number): number {
  const date = new Date(now);
  return period === "day"
    ? Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1)
    : Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}
