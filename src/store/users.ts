/**
 * The team's users (docs/team.md): each has an access token — only its SHA-256 is stored —,
 * optional budgets of tokens or cost per UTC day or month, and optional own provider keys, kept
 * as the *name* of an environment variable of the server process (never the key). A conversation
 * and an agent stream belong to the user whose request first named them; no other user may use
 * them. A user's usage is a ledger of their model calls (`user_calls`): each call reserves an
 * estimate before it is sent and is settled with what the provider reported (or, for a call cut
 * short after tokens arrived, an estimate of what it used) when it ends.
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
  /** Settled calls: what the provider reported, or the estimate of a call cut short. */
  readonly tokens: number;
  readonly cost: number;
  /** Calls admitted and not settled yet (running, or on an instance that died): their estimates. */
  readonly reservedTokens: number;
  readonly reservedCost: number;
}

/** A user's own key for a provider: the environment variable the server reads it from. */
export interface UserKey {
  /** The provider id of the configured models it replaces the team's key for (e.g. `openai`). */
  readonly provider: string;
  /** The variable's name; its value is read by the server process at call time. */
  readonly env: string;
}

/** A model call about to be sent for a user, with what it is expected to use at most. */
export interface CallReservation {
  readonly callID: string;
  readonly userID: string;
  readonly conversationID: string;
  readonly tokens: number;
  readonly cost: number;
}

/**
 * What one attempt of a call used. The attempt that reserved the call settles the call's own row;
 * a replay (a call resumed after a crash or a takeover, never reserved) settles a row of its own,
 * `replayID` naming the attempt, so a call sent twice counts twice and a settlement written twice
 * (a retry after a lost answer) counts once.
 */
export interface CallSettlement extends CallReservation {
  readonly replayID?: string;
}

/** `reserve`'s answer: the budget's, or a user revoked since the request began. */
export type AdmissionVerdict =
  | BudgetVerdict
  | { readonly type: "revoked"; readonly message: string };

export interface UserRecord {
  readonly userID: string;
  readonly name: string;
  readonly createdAt: number;
  readonly revokedAt: number | null;
  readonly budgets: readonly Budget[];
}

export interface UserListing extends UserRecord {
  readonly keys: readonly UserKey[];
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
  /**
   * Binds a conversation to the user — `null`: the admin — unless it is bound already (the first
   * one stays), and answers whom it is bound to (`null`: the admin's): not `userID` means it is
   * not the user's.
   */
  bindConversation(
    conversationID: string,
    userID: string | null,
    now: number,
  ): Promise<string | null>;
  /** The same for an agent stream, by its request id. */
  bindStream(requestID: string, userID: string | null, now: number): Promise<string | null>;
  /** The user a conversation belongs to, or null (the admin's, or not bound). */
  ownerOf(conversationID: string): Promise<string | null>;
  /** Whether the user may start another model call now, counting reservations. */
  checkBudget(userID: string, now: number): Promise<BudgetVerdict>;
  /**
   * Checks that the user is active and their budgets admit another call and, if so, reserves the
   * call's estimate — one step under a per-user lock, so concurrent calls of one user see each
   * other's reservations. `exceeded`, `revoked`: nothing was reserved.
   */
  reserve(call: CallReservation, now: number): Promise<AdmissionVerdict>;
  /** Whether the user exists and is not revoked (a replay's admission: it reserves nothing). */
  isActive(userID: string): Promise<boolean>;
  /**
   * Marks a reservation as still in use at `now`: it is held for `RESERVATION_LIFETIME_MS` from
   * its call's last such sign of life, so a call that runs long keeps it.
   */
  hold(callID: string, now: number): Promise<void>;
  /**
   * Records what one attempt of a call used (`CallSettlement`): the reserved attempt's figures
   * replace its reservation; a replay's go to a row of its own. Writing the same settlement
   * again changes nothing.
   */
  settle(call: CallSettlement, now: number): Promise<void>;
  /** Sets (`env`) or removes (`null`) the user's own key for a provider. False: no such user. */
  setKey(name: string, provider: string, env: string | null): Promise<boolean>;
  /** The user's own keys. */
  keysOf(userID: string): Promise<UserKey[]>;
  close(): Promise<void>;
}

export const USER_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/**
 * How long an unsettled reservation is held after its call's last sign of life (`Users.hold`,
 * sent every minute while the call runs: llm/gated-llm.ts `HOLD_EVERY_MS`), so a call held as
 * long as it runs, however long. A call settles when it ends; one that never does belonged to an
 * instance that died mid-call, or its settlement could not be written (retried within this time,
 * cli/team-users.ts). Several missed signs of life, so a slow database does not drop a running
 * call's reservation.
 */
export const RESERVATION_LIFETIME_MS = 5 * 60_000;

/** Why a revoked user's call is refused (their turn may still run: it was authenticated before). */
export const REVOKED_MESSAGE =
  "The model call was not started: this user's access was revoked (`cursor-byok users revoke`). " +
  "Ask an admin for a new token.";

/** How every budget refusal's message starts (the client shows it as is). */
export const BUDGET_REACHED_PREFIX = "Budget reached: ";

/** An environment variable's name, as a user's key is recorded (never its value). */
export const KEY_VARIABLE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * How the variable of every user's own key is named. A user's key is sent to a configured model's
 * endpoint as that user's key, so the variable must never be one of the server's own secrets (its
 * admin token, `DATABASE_URL`/`PG*`, the models' `apiKeyEnv`, web search keys, or anything else
 * in its environment): only variables made for users' keys qualify.
 */
export const USER_KEY_PREFIX = "CURSOR_BYOK_USER_";

/** Why `name` may not hold a user's own key, or null when it may. */
export function toUserKeyVariableProblem(name: string): string | null {
  if (!KEY_VARIABLE.test(name)) {
    return "A key is given as the name of an environment variable (letters, digits, _), never the key itself";
  }
  if (!name.startsWith(USER_KEY_PREFIX) || name.length === USER_KEY_PREFIX.length) {
    return (
      `A user's key variable is named ${USER_KEY_PREFIX}<something> (e.g. ${USER_KEY_PREFIX}ANN_OPENAI), ` +
      `so it can never name one of the server's own secrets; ${name} is not`
    );
  }
  return null;
}

/** A provider id, as configured models name it (`openai`, `anthropic`, `openrouter`, …). */
export const PROVIDER_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

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

/**
 * The first budget the usage has reached (a limit reached counts as exceeded), or ok. Reserved
 * amounts count as used: of concurrent calls, only those admitted before the reservations reach
 * the limit go ahead.
 */
export function toBudgetVerdict(
  name: string,
  budgets: readonly Budget[],
  usage: Readonly<Record<BudgetPeriod, UserUsage>>,
  now: number,
): BudgetVerdict {
  for (const budget of [...budgets].sort((a, b) => a.period.localeCompare(b.period))) {
    const used = usage[budget.period];
    const checks: ["tokens" | "cost", number, number, number | null][] = [
      ["tokens", used.tokens, used.reservedTokens, budget.maxTokens],
      ["cost", used.cost, used.reservedCost, budget.maxCost],
    ];
    for (const [limit, amount, reserved, max] of checks) {
      if (max === null || amount + reserved < max) continue;
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
          `${BUDGET_REACHED_PREFIX}${name} has used ${figure(amount)} of ${figure(max)} ${period} (UTC)` +
          (reserved > 0 ? `, and calls in progress hold ${figure(reserved)} more` : "") +
          ". " +
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
