/**
 * The team's users in a server (docs/team.md): their tokens authenticate requests
 * (transport/request-user.ts), and their budgets admit model calls (llm/gated-llm.ts). A
 * conversation belongs to the user whose request first called a model in it; its later calls —
 * also those a takeover resumes on another instance, with no request around them — count
 * against that user.
 */
import type { Config } from "../config/index.ts";
import type { AdmitCall } from "../llm/index.ts";
import { openPostgresUsers } from "../store/postgres-users.ts";
import type { Users } from "../store/users.ts";
import { type Authenticate, currentRequestUser } from "../transport/request-user.ts";

export interface Team {
  readonly users: Users;
  readonly authenticate: Authenticate;
  readonly admit: AdmitCall;
  close(): Promise<void>;
}

export function openTeamUsers(config: Config): Users {
  if (config.postgres === undefined) {
    throw new Error("users need the PostgreSQL store (data.postgres.url or DATABASE_URL)");
  }
  return openPostgresUsers({
    url: config.postgres.url.reveal(),
    ...(config.postgres.statementTimeoutMs === undefined
      ? {}
      : { statementTimeoutMs: config.postgres.statementTimeoutMs }),
  });
}

export function openTeam(config: Config): Team {
  return createTeam(openTeamUsers(config));
}

export function createTeam(users: Users, now: () => number = Date.now): Team {
  return {
    users,
    authenticate: (token) => users.authenticate(token),
    async admit(call) {
      const user = currentRequestUser();
      if (user !== undefined) await users.bindConversation(call.conversationID, user.userID, now());
      const owner = user?.userID ?? (await users.ownerOf(call.conversationID));
      if (owner === null) return null;
      const verdict = await users.checkBudget(owner, now());
      return verdict.type === "ok" ? null : verdict.message;
    },
    close: () => users.close(),
  };
}
