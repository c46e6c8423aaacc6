/**
 * Which team user may use an agent stream or a conversation (docs/team.md "Users and budgets"):
 * the first request that names one — a RunSSE or BidiAppend by its request id, a run request
 * by its conversation id — binds it in the database, so every instance refuses it to any other
 * user (`belongs_to_another_user`, docs/wire-errors.md). A request made with the admin's token
 * binds what it names first to the admin (no user may take it), and may use everything. Helper
 * pseudo-conversations (`cursor-byok-helper-*`) are the server's: no user's request may name one.
 * On a server without users nothing is checked.
 */
import { toRootConversationID } from "../loop/index.ts";
import { toProtocolError } from "./cursor/index.ts";
import { HELPER_CONVERSATION_PREFIX } from "./helper-calls.ts";
import { currentRequestUser, isAdminRequest } from "./request-user.ts";

/**
 * The bindings, kept in the store (store/users.ts): each answers whom the id is bound to after
 * the call (`null`: the admin).
 */
export interface UserBindings {
  bindStream(requestID: string, userID: string | null, now: number): Promise<string | null>;
  bindConversation(
    conversationID: string,
    userID: string | null,
    now: number,
  ): Promise<string | null>;
}

/** Throws `belongs_to_another_user` when the request's user may not use what it names. */
export type CheckAccess = (target: {
  readonly requestID?: string;
  readonly conversationID?: string;
}) => Promise<void>;

export function createAccessCheck(bindings: UserBindings, now: () => number): CheckAccess {
  return async ({ requestID, conversationID }) => {
    const user = currentRequestUser();
    if (user === undefined) {
      // The admin: claims what it names first, so no user can take it later; uses anything. A
      // subagent's conversation is left to its root's owner (the root is what a user is checked
      // against first).
      if (requestID !== undefined && requestID !== "") {
        await bindings.bindStream(requestID, null, now());
      }
      if (conversationID !== undefined && conversationID !== "") {
        await bindings.bindConversation(toRootConversationID(conversationID), null, now());
      }
      return;
    }
    if (conversationID?.startsWith(HELPER_CONVERSATION_PREFIX) === true) {
      throw toProtocolError({ type: "belongs_to_another_user", what: "conversation" });
    }
    if (requestID !== undefined && requestID !== "") {
      const owner = await bindings.bindStream(requestID, user.userID, now());
      if (owner !== user.userID) {
        throw toProtocolError({ type: "belongs_to_another_user", what: "agent stream" });
      }
    }
    if (conversationID !== undefined && conversationID !== "") {
      // A subagent's conversation is its top-level conversation's: naming one is naming both.
      const root = toRootConversationID(conversationID);
      for (const id of root === conversationID ? [root] : [root, conversationID]) {
        const owner = await bindings.bindConversation(id, user.userID, now());
        if (owner !== user.userID) {
          throw toProtocolError({ type: "belongs_to_another_user", what: "conversation" });
        }
      }
    }
  };
}

/**
 * Whether the request being handled may see a conversation's history without using it: asked
 * before a fork copies another conversation's history into the request's new conversation
 * (loop/fork.ts; RunnerOptions `mayCopy`). The admin sees every conversation; a user only the
 * ones whose top-level conversation is bound to them — never one bound to another user, to the
 * admin, or to nobody. Nothing is bound by asking. Only made on a server with users; a check
 * made outside any request's context (no user, and not the admin's request: `runAsAdmin`) sees
 * nothing, so code that loses the request's context copies nothing rather than anything
 * (review-fork #6).
 */
export function createReadCheck(owners: {
  ownerOf(conversationID: string): Promise<string | null>;
}): (conversationID: string) => Promise<boolean> {
  return async (conversationID) => {
    const user = currentRequestUser();
    if (user === undefined) return isAdminRequest();
    if (conversationID.startsWith(HELPER_CONVERSATION_PREFIX)) return false;
    return (await owners.ownerOf(toRootConversationID(conversationID))) === user.userID;
  };
}
