/**
 * The team user a request acts for (docs/team.md): set around the handling of a request whose
 * bearer token is a user's, and readable by whatever that request starts — the turn it runs and
 * the model calls of that turn — through Node's async context, so the user needs no parameter
 * through the transport, the runner and the loop.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { AuthenticatedUser } from "../store/index.ts";

/** Who a request acts for, with team users: a user, or the admin (the server's access token). */
const ADMIN = Symbol("admin");
const current = new AsyncLocalStorage<AuthenticatedUser | typeof ADMIN>();

export function runAsUser<T>(user: AuthenticatedUser, work: () => T): T {
  return current.run(user, work);
}

/**
 * Runs the handling of a request made with the admin's token on a server with users, so that
 * "the admin" is said, not inferred from no user (which is also code running outside any
 * request: see `isAdminRequest`).
 */
export function runAsAdmin<T>(work: () => T): T {
  return current.run(ADMIN, work);
}

/** The user of the request being handled, or undefined (no users, or the admin token). */
export function currentRequestUser(): AuthenticatedUser | undefined {
  const actor = current.getStore();
  return actor === ADMIN ? undefined : actor;
}

/**
 * Whether the request being handled was made with the admin's token on a server with users
 * (`runAsAdmin`); false for a user's, and for code outside any request's context.
 */
export function isAdminRequest(): boolean {
  return current.getStore() === ADMIN;
}

/** Checks a user's access token (store/users.ts `Users.authenticate`). */
export type Authenticate = (token: string) => Promise<AuthenticatedUser | null>;
