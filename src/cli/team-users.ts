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
import type { Config } from "../config/index.ts";
import { type AdmitCall, createSecret, type Secret } from "../llm/index.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import type { Users } from "../store/users.ts";
import { type Authenticate, currentRequestUser } from "../transport/request-user.ts";
import { type CheckAccess, createAccessCheck } from "../transport/user-access.ts";

export interface Team {
  readonly users: Users;
  readonly authenticate: Authenticate;
  readonly admit: AdmitCall;
  readonly access: CheckAccess;
  close(): Promise<void>;
}

export interface TeamOptions {
  readonly now?: () => number;
  /** Where users' own keys are read, at call time. Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export function openTeamUsers(config: Config): Users {
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
  });
}

export function openTeam(config: Config): Team {
  return createTeam(openTeamUsers(config));
}

export function createTeam(users: Users, options: TeamOptions = {}): Team {
  const now = options.now ?? Date.now;
  const env = options.env ?? process.env;
  return {
    users,
    authenticate: (token) => users.authenticate(token),
    access: createAccessCheck(users, now),
    async admit({ call, model, replay, reservation }) {
      // The requester first: a conversation's requests come from its user only (the access
      // check), and a helper call's pseudo-conversation must never count for anyone else.
      const userID =
        currentRequestUser()?.userID ?? (await users.ownerOf(call.conversationID)) ?? null;
      if (userID === null) return { type: "admitted" };
      let apiKey: Secret | undefined;
      if (model !== undefined) {
        const own = (await users.keysOf(userID)).find((key) => key.provider === model.provider);
        if (own !== undefined) {
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
      if (!replay) {
        const verdict = await users.reserve({ ...ledger, ...reservation }, now());
        if (verdict.type === "exceeded") {
          return { type: "refused", kind: "budget", message: verdict.message };
        }
      }
      return {
        type: "admitted",
        ...(apiKey === undefined ? {} : { apiKey }),
        settle: (used) => users.settle({ ...ledger, ...used }, now()),
      };
    },
    close: () => users.close(),
  };
}
