/**
 * Which conversation a client's start goes to (loop/rewind.ts, docs/protocol.md "Rewinds"): the
 * client names its conversation X and tells where it stands (`RouteHint`: the id of the last turn
 * it shows, its message's id). Usually that is X's last turn: X, decided from X's records in
 * memory, without a store read. Otherwise the turn is looked up — in X's records, else through the
 * store's binding of its request id, which may name a branch of X made by an earlier rewind — and
 * `toRewind` decides on that conversation: a continuation goes to it; a rewind makes a branch
 * `X~edit~<request id>` whose first state (`toBranchState`) is committed here, as version 1 of
 * the branch under the input id `<request id>:branch`, so a replayed request finds the branch it
 * made and makes no second one.
 *
 * Each conversation is read and written inside its own queue step; no step waits for another
 * conversation's queue.
 */
import {
  type ConversationState,
  isBranchOf,
  isIdle,
  type RewindDecision,
  toBranchConversationID,
  toBranchState,
  toRewind,
} from "../loop/index.ts";
import type { Store } from "../store/index.ts";
import type { ConversationCache } from "./conversation-cache.ts";
import type { SerialQueue } from "./serial-queue.ts";
import type { Routed, RouteHint } from "./types.ts";

export interface RouteStartDeps {
  readonly store: Pick<Store, "findRequestStream" | "commitInput">;
  readonly queue: SerialQueue;
  readonly live: ConversationCache;
}

/**
 * Routes a start (`branch`: it may make a branch) or a summarize (only follows the client to the
 * branch it is on) of the client's conversation `clientID`, sent as request `requestID`.
 */
export type RouteStart = (
  clientID: string,
  hint: RouteHint,
  requestID: string,
  branch: boolean,
) => Promise<Routed>;

export function createRouteStart(deps: RouteStartDeps): RouteStart {
  const { store, queue, live } = deps;

  /**
   * The decision on `conversationID`, read in its queue step. null when its records do not know
   * the client's last turn, unless `anyway` (the binding named it: decide there all the same).
   */
  const decide = (conversationID: string, hint: RouteHint, requestID: string, anyway: boolean) =>
    queue.run(conversationID, async () => {
      const state = (await live.load(conversationID)).state.committed;
      const last = state.turnStarts?.at(-1);
      if (
        hint.lastTurnOrigin !== null &&
        last !== undefined &&
        last.turn === state.turnCount &&
        last.origin === hint.lastTurnOrigin
      ) {
        return { state, decision: { type: "continue", reason: "last_turn" } as RewindDecision };
      }
      const knows =
        hint.lastTurnOrigin === null ||
        (state.turnStarts ?? []).some((start) => start.origin === hint.lastTurnOrigin);
      if (!knows && !anyway) return null;
      return {
        state,
        decision: toRewind(state, {
          lastTurnOrigin: hint.lastTurnOrigin,
          messageID: hint.messageID,
          origin: requestID,
        }),
      };
    });

  /** Commits the branch's first state, unless a replay of the request made it already. */
  const makeBranch = (
    source: ConversationState,
    afterTurn: number,
    branchID: string,
    requestID: string,
  ) =>
    queue.run(branchID, async () => {
      const entry = await live.load(branchID);
      if (entry.version > 0) return;
      const inputID = `${requestID}:branch`;
      const state = toBranchState(source, afterTurn, branchID, inputID);
      const result = await store.commitInput({
        inputID,
        expectedVersion: 0,
        state,
        result: {
          command: "wait_input",
          rejected: null,
          branch: { from: source.conversationID, afterTurn },
        },
      });
      if (result.type === "committed") {
        entry.state = { committed: state, pending: null };
        entry.version = result.commit.version;
      } else {
        // Made meanwhile (another instance, a replay): what was committed is the branch.
        await live.reload(entry);
      }
    });

  return async (clientID, hint, requestID, branch) => {
    // The client shows turns, but the last one's id could not be read: nothing to go by.
    if (hint.lastTurnOrigin === "") return { conversationID: clientID, reason: "unknown_origin" };
    let found = await decide(clientID, hint, requestID, false);
    if (found === null && hint.lastTurnOrigin !== null) {
      // Not one of X's turns: the binding of its request names the conversation that ran it.
      const bound = await store.findRequestStream(hint.lastTurnOrigin);
      const other = bound?.conversationID;
      if (other !== undefined && other !== clientID && isBranchOf(other, clientID)) {
        found = await decide(other, hint, requestID, true);
      }
    }
    if (found === null) return { conversationID: clientID, reason: "unknown_origin" };
    const { state, decision } = found;
    if (decision.type === "continue") {
      return { conversationID: state.conversationID, reason: decision.reason };
    }
    // A summarize or a resume goes where the client's last turn ran; only a start branches.
    if (!branch) return { conversationID: state.conversationID };
    const branchID = toBranchConversationID(clientID, requestID);
    await makeBranch(state, decision.afterTurn, branchID, requestID);
    return {
      conversationID: branchID,
      rewind: {
        from: state.conversationID,
        fromTurn: state.turnCount,
        afterTurn: decision.afterTurn,
        dropped: decision.dropped,
        running: !isIdle(state.status),
      },
    };
  };
}
