/**
 * The team's users in a server (docs/team.md): their tokens authenticate requests
 * (transport/request-user.ts), their bindings keep each stream and conversation to its user
 * (transport/user-access.ts), and their budgets and own keys apply to model calls
 * (llm/gated-llm.ts).
 *
 * Whose a model call is: the user of the request that makes it (helper calls such as chat titles
 * run in shared pseudo-conversations, so each counts for whoever asked), else — a call a takeover
 * resumes on another instance, with no request around it, or the admin's request in a user's
 * conversation — the user its conversation is bound to. A call of no user runs on the team's
 * keys, unlimited.
 */
import { randomUUID } from "node:crypto";
import type { Config } from "../config/index.ts";
import { errorMessage } from "../errors/error-message.ts";
import { type AdmitCall, createSecret, type Secret } from "../llm/index.ts";
import { toRootConversationID } from "../loop/index.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import {
  type CallSettlement,
  REVOKED_MESSAGE,
  toUserKeyVariableProblem,
  type Users,
} from "../store/users.ts";
import type { Log } from "../transport/log.ts";
import { type Authenticate, currentRequestUser } from "../transport/request-user.ts";
import { type CheckAccess, createAccessCheck, createReadCheck } from "../transport/user-access.ts";

const revokedRefusal = { type: "refused", kind: "other", message: REVOKED_MESSAGE } as const;

export interface Team {
  readonly users: Users;
  readonly authenticate: Authenticate;
  readonly admit: AdmitCall;
  readonly access: CheckAccess;
  /** Whether the request's user may see a conversation's history (a fork's copy; user-access.ts). */
  readonly mayCopy: (conversationID: string) => Promise<boolean>;
  close(): Promise<void>;
}

/** A settlement that could not be written (ids and figures only: never a key or a message). */
export interface LedgerFailure {
  readonly callID: string;
  readonly userID: string;
  readonly tokens: number;
  readonly cost: number;
  /** `retrying`: tried again later (the reservation still counts meanwhile); `lost`: given up. */
  readonly outcome: "retrying" | "lost";
  readonly error: unknown;
}

export interface TeamOptions {
  readonly now?: () => number;
  /** Where users' own keys are read, at call time. Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * The waits before each retry of a settlement that failed. Default `SETTLE_RETRY_DELAYS_MS`:
   * all within the reservation's lifetime, so the reservation counts until the settlement lands.
   */
  readonly settleRetryDelaysMs?: readonly number[];
  /**
   * Variables the server uses itself (its admin token, the models' keys): never read as a user's
   * key, even when named like one (`USER_KEY_PREFIX`).
   */
  readonly serverVariables?: readonly string[];
  /** Told of each settlement that failed (for the log). */
  readonly onLedgerFailure?: (failure: LedgerFailure) => void;
  /** Told when the hourly pruning of old rows fails (for the log; docs/team.md "Retention"). */
  readonly onPruneFailure?: (error: unknown) => void;
}

/**
 * 5 s, 30 s, 2 min: 2.6 minutes in all, inside the reservation's 5-minute lifetime after the call's
 * last sign of life (store/users.ts), so until the last retry the call's reservation stands in for
 * its usage (an upper estimate of its output).
 */
export const SETTLE_RETRY_DELAYS_MS: readonly number[] = [5_000, 30_000, 120_000];

export function openTeamUsers(config: Config, onPruneFailure?: (error: unknown) => void): Users {
  if (config.postgres === undefined) {
    throw new Error("users need the PostgreSQL store (data.postgres.url or DATABASE_URL)");
  }
  return openPostgresUsers({
    url: config.postgres.url.reveal(),
    // Every request's token is looked up here: as many connections as the store may use.
    ...(config.postgres.poolSize === undefined ? {} : { poolSize: config.postgres.poolSize }),
    ...(config.postgres.statementTimeoutMs === undefined
      ? {}
      : { statementTimeoutMs: config.postgres.statementTimeoutMs }),
    ...(onPruneFailure === undefined ? {} : { onPruneFailure }),
  });
}

/**
 * Logs each failed settlement: a warning while it is retried, an error when it is given up (the
 * call's usage is then missing from the ledger). Ids and figures only.
 */
export function logLedgerFailures(log: Log): (failure: LedgerFailure) => void {
  return ({ error, outcome, ...call }) => {
    const fields = { ...call, error: errorMessage(error) };
    if (outcome === "retrying")
      log.warn(fields, "a model call's usage could not be recorded; retrying");
    else
      log.error(
        fields,
        "a model call's usage could not be recorded; it is missing from the user's budget",
      );
  };
}

/** Logs a failed pruning: retention is behind until it works again (docs/team.md "Retention"). */
export function logPruneFailures(log: Log): (error: unknown) => void {
  return (error) =>
    log.warn(
      { error: errorMessage(error) },
      "old stream owners and usage rows could not be pruned; retrying in an hour",
    );
}

export function openTeam(config: Config, options: TeamOptions = {}): Team {
  return createTeam(openTeamUsers(config, options.onPruneFailure), {
    serverVariables: toServerVariables(config),
    ...options,
  });
}

/** The environment variables the configuration reads secrets from. */
export function toServerVariables(config: Config): string[] {
  const names = config.models.flatMap(({ config: model }) =>
    model.apiKey.type === "env" ? [model.apiKey.name] : [],
  );
  if (config.server.accessToken.type === "env") names.push(config.server.accessToken.variable);
  return names;
}

export function createTeam(users: Users, options: TeamOptions = {}): Team {
  const now = options.now ?? Date.now;
  const env = options.env ?? process.env;
  const retryDelays = options.settleRetryDelaysMs ?? SETTLE_RETRY_DELAYS_MS;
  const serverVariables = new Set(options.serverVariables ?? []);
  /**
   * Writes a settlement; if that fails, tries again in the background after each of the delays
   * (the call is not held up), reporting each failure. A settlement is keyed by its attempt, so a
   * retry after a write whose answer was lost counts once.
   */
  const settle = async (settlement: CallSettlement): Promise<void> => {
    const report = (outcome: LedgerFailure["outcome"], error: unknown) =>
      options.onLedgerFailure?.({
        callID: settlement.callID,
        userID: settlement.userID,
        tokens: settlement.tokens,
        cost: settlement.cost,
        outcome,
        error,
      });
    const attempt = async (retry: number): Promise<void> => {
      try {
        await users.settle(settlement, now());
      } catch (error) {
        const delay = retryDelays[retry];
        report(delay === undefined ? "lost" : "retrying", error);
        if (delay !== undefined) {
          setTimeout(() => void attempt(retry + 1), delay).unref();
        }
      }
    };
    await attempt(0);
  };
  return {
    users,
    authenticate: (token) => users.authenticate(token),
    access: createAccessCheck(users, now),
    mayCopy: createReadCheck(users),
    async admit({ call, model, replay, reservation }) {
      // The requester first: a conversation's requests come from its user only (the access
      // check), and a helper call's pseudo-conversation must never count for anyone else.
      // A subagent's conversation counts for its top-level conversation's user.
      const userID =
        currentRequestUser()?.userID ??
        (await users.ownerOf(toRootConversationID(call.conversationID))) ??
        null;
      if (userID === null) return { type: "admitted" };
      let apiKey: Secret | undefined;
      if (model !== undefined) {
        const own = (await users.keysOf(userID)).find((key) => key.provider === model.provider);
        if (own !== undefined) {
          // Recorded before names were restricted, or written to the database directly.
          const problem = serverVariables.has(own.env)
            ? `${own.env} is one of the server's own variables`
            : toUserKeyVariableProblem(own.env);
          if (problem !== null) {
            return {
              type: "refused",
              kind: "other",
              message:
                `The model call was not started: your own ${own.provider} key is recorded as the ` +
                `variable ${own.env}, which may not hold a user's key (${problem}). Ask an admin to ` +
                "set it again with `cursor-byok users keys`.",
            };
          }
          const value = env[own.env]?.trim();
          if (value === undefined || value === "") {
            return {
              type: "refused",
              kind: "other",
              message:
                `The model call was not started: your own ${own.provider} key is to be read from ` +
                `the environment variable ${own.env}, which is not set on this server instance. ` +
                "Ask an admin to set it there (or to remove your key with `cursor-byok users keys`).",
            };
          }
          apiKey = createSecret(value);
        }
      }
      const ledger = { callID: call.callID, userID, conversationID: call.conversationID };
      if (replay) {
        // A replay reserves nothing (it was admitted before), but a revoked user's turn starts
        // no new provider call.
        if (!(await users.isActive(userID))) return revokedRefusal;
        // Its own row: the first attempt's settlement stands, and this one counts too.
        const replayID = randomUUID();
        return {
          type: "admitted",
          ...(apiKey === undefined ? {} : { apiKey }),
          settle: (used) => settle({ ...ledger, ...used, replayID }),
        };
      }
      const verdict = await users.reserve({ ...ledger, ...reservation }, now());
      if (verdict.type === "exceeded") {
        return { type: "refused", kind: "budget", message: verdict.message };
      }
      if (verdict.type === "revoked")
        return { type: "refused", kind: "other", message: verdict.message };
      // `ledger`, never `call`: the gate keeps `settle` and `hold` for as long as the call runs,
      // and a closure here that named the call would keep its whole request (team-admit.test.ts).
      return {
        type: "admitted",
        ...(apiKey === undefined ? {} : { apiKey }),
        settle: (used) => settle({ ...ledger, ...used }),
        hold: () => users.hold(ledger.callID, now()),
      };
    },
    close: () => users.close(),
  };
}
