/**
 * The team user a request acts for (docs/team.md): set around the handling of a request whose
 * bearer token is a user's, and readable by whatever that request starts — the turn it runs and
 * the model calls of that turn — through Node's async context, so the user needs no parameter
 * through the transport, the runner and the loop.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { AuthenticatedUser } from "../store/index.ts";

const current = new AsyncLocalStorage<AuthenticatedUser>();

export function runAsUser<T>(user: AuthenticatedUser, work: () => T): T {
  return current.run(user, work);
}

/** The user of the request being handled, or undefined (no users, or the admin token). */
export function currentRequestUser(): AuthenticatedUser | undefined {
  return current.getStore();
}

/** Checks a user's access token (store/users.ts `Users.authenticate`). */
export type Authenticate = (token: string) => Promise<AuthenticatedUser | null>;
