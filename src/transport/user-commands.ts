/**
 * Shell commands users ran themselves, kept per conversation until the conversation's next turn
 * starts and hands them to the model as context (cursor/user-command.ts). In memory and bounded:
 * a restart loses commands not yet seen by a turn, which only costs the model that hint.
 */
import type { ContextSupplement } from "../loop/index.ts";
import { toUserCommandSupplement, type UserCommand } from "./cursor/user-command.ts";

/** Commands kept per conversation, and conversations kept, at most (oldest dropped first). */
const PER_CONVERSATION = 20;
const CONVERSATIONS = 1_000;

export interface UserCommands {
  record(conversationID: string, run: UserCommand): void;
  /** The conversation's recorded commands as supplements, in order; forgets them. */
  take(conversationID: string): ContextSupplement[];
}

export function createUserCommands(): UserCommands {
  const pending = new Map<string, UserCommand[]>();
  return {
    record(conversationID, run) {
      const runs = pending.get(conversationID) ?? [];
      pending.delete(conversationID);
      pending.set(conversationID, [...runs, run].slice(-PER_CONVERSATION));
      if (pending.size > CONVERSATIONS) {
        const oldest = pending.keys().next().value;
        if (oldest !== undefined) pending.delete(oldest);
      }
    },
    take(conversationID) {
      const runs = pending.get(conversationID) ?? [];
      pending.delete(conversationID);
      return runs.map((run, index) => toUserCommandSupplement(run, index));
    },
  };
}
