/**
 * Forks (docs/protocol.md "Rewinds"): the Cursor IDE forks or duplicates a chat (and runs
 * best-of-N) on the client. It clones the chat under a NEW conversation id, and the clone's first
 * start carries the source's state at the fork point: the same turns, with the request ids the
 * source's turns ran under. This server has no history for the new id; the model would forget
 * everything the user sees. The new conversation gets, as its first commit, a copy of the
 * source's history up to the end of the turn the client shows last — the same copy as a rewind's
 * branch (rewind.ts `toBranchState`) — and the new message runs on it.
 *
 * `toFork` decides from the new conversation's state, the client's last turn and what the runner
 * found of the conversation that ran that turn (the store's binding of its request id); the
 * runner reads the store, checks who may see the source, and commits `toBranchState`.
 */
import { isIdle } from "./state.ts";
import type { ConversationState } from "./types.ts";

/** What the runner found of the conversation that ran the client's last turn. */
export type ForkSource =
  /** No conversation here ran it: a chat started elsewhere (Cursor's backend), or a wiped store. */
  | { readonly type: "unknown" }
  /** Another user's (team mode): never copied, never read. */
  | { readonly type: "not_visible"; readonly conversationID: string }
  | { readonly type: "known"; readonly state: ConversationState };

/** Why a start on a new conversation copies nothing. */
export type NoForkReason =
  /** The conversation has history already: a continuation (or a replay of the fork's start). */
  | "has_history"
  /** The client shows no turns: a new chat. */
  | "no_turns"
  /** The client shows turns, but the last one's id could not be read. */
  | "unreadable_turn"
  /** No conversation here ran the client's last turn (import: not done here). */
  | "unknown_source"
  /** The conversation that ran it is another user's. */
  | "not_visible"
  /** Its records do not know the turn (older than the records kept, or saved before them). */
  | "unknown_origin"
  /** The fork point is before the source's first turn ended (it still runs): nothing to copy. */
  | "nothing_to_copy";

export type ForkDecision =
  | {
      readonly type: "fork";
      /** The source's conversation id. */
      readonly from: string;
      /** The copy keeps the source's history up to the end of this turn (≥ 1). */
      readonly afterTurn: number;
      /** How many messages the copy holds. */
      readonly messages: number;
    }
  | { readonly type: "none"; readonly reason: NoForkReason };

const none = (reason: NoForkReason): ForkDecision => ({ type: "none", reason });

/**
 * Whether a start on `target` (the client's conversation) begins with a copy of another
 * conversation's history. `lastTurnOrigin`: the client's id of the last turn it shows (null: it
 * shows none; "": unreadable).
 *
 * - `target` has turns: no fork (its own history is used; rewinds are rewind.ts').
 * - The source ran the client's last turn k (its records know it): copy up to the end of turn k
 *   when turn k has ended (a later turn of the source may run: what it adds is not copied). When
 *   turn k is the source's last and still runs (the user forked a chat with a turn in progress),
 *   its messages so far are no consistent history (a tool call without its result): copy up to
 *   the end of turn k − 1, the last turn the source completed; the model does not see turn k.
 *   A turn that ended canceled or failed has ended: copied with what it committed.
 */
export function toFork(
  target: ConversationState,
  lastTurnOrigin: string | null,
  source: ForkSource,
): ForkDecision {
  if (target.turnCount > 0 || target.messages.length > 0) return none("has_history");
  if (lastTurnOrigin === null) return none("no_turns");
  if (lastTurnOrigin === "") return none("unreadable_turn");
  if (source.type === "unknown") return none("unknown_source");
  if (source.type === "not_visible") return none("not_visible");
  const { state } = source;
  const starts = state.turnStarts ?? [];
  const turn = starts.find((start) => start.origin === lastTurnOrigin)?.turn;
  if (turn === undefined) return none("unknown_origin");
  const running = turn === state.turnCount && !isIdle(state.status);
  const afterTurn = running ? turn - 1 : turn;
  const cut =
    afterTurn === state.turnCount
      ? state.messages.length
      : starts.find((start) => start.turn === afterTurn + 1)?.at;
  if (cut === undefined) return none("unknown_origin");
  if (afterTurn === 0 || cut === 0) return none("nothing_to_copy");
  return { type: "fork", from: state.conversationID, afterTurn, messages: cut };
}
