/**
 * Which team user may use an agent stream or a conversation (docs/team.md "Users and budgets"):
 * the first user whose request names one — a RunSSE or BidiAppend by its request id, a run request
 * by its conversation id — binds it in the database, so every instance refuses it to any other
 * user (`belongs_to_another_user`, docs/wire-errors.md). Requests made with the admin's token, or
 * on a server without users, run as no user and are not checked.
 */
import { toProtocolError } from "./cursor/index.ts";
import { currentRequestUser } from "./request-user.ts";

/** The bindings, kept in the store (store/users.ts): each answers the user bound after the call. */
export interface UserBindings {
  bindStream(requestID: string, userID: string, now: number): Promise<string>;
  bindConversation(conversationID: string, userID: string, now: number): Promise<string>;
}

/** Throws `belongs_to_another_user` when the request's user may not use what it names. */
export type CheckAccess = (target: {
  readonly requestID?: string;
  readonly conversationID?: string;
}) => Promise<void>;

export function createAccessCheck(bindings: UserBindings, now: () => number): CheckAccess {
  return async ({ requestID, conversationID }) => {
    const user = currentRequestUser();
    if (user === undefined) return;
    if (requestID !== undefined && requestID !== "") {
      const owner = await bindings.bindStream(requestID, user.userID, now());
      if (owner !== user.userID) {
        throw toProtocolError({ type: "belongs_to_another_user", what: "agent stream" });
      }
    }
    if (conversationID !== undefined && conversationID !== "") {
      const owner = await bindings.bindConversation(conversationID, user.userID, now());
      if (owner !== user.userID) {
        throw toProtocolError({ type: "belongs_to_another_user", what: "conversation" });
      }
    }
  };
}
