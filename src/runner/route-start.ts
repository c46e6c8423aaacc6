/**
 * Which conversation a client's start goes to (loop/rewind.ts, docs/protocol.md "Rewinds"): the
 * client names its conversation X and tells where it stands (`RouteHint`: the id of the last turn
 * it shows, its message's id). Usually that is X's last turn: X, decided from X's records in
 * memory, without a store read. Otherwise `toRewind` decides on the first of these whose records
 * know that turn: the branch of X the client's last start went to (remembered on X's cache entry,
 * so a message sent while a branch's first turn runs stays on that branch), X itself, or the
 * conversation the store's binding of the turn's request id names, when it is a branch of X (after
 * a restart). A continuation goes to that conversation; a rewind makes a branch
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
   * The decision on `conversationID`, read in its queue step; `decision` null when its records do
   * not know the client's last turn, unless `anyway` (the binding named it: decide there all the
   * same). `branch`: the branch the client's last start went to, when known in memory.
   */
  const decide = (conversationID: string, hint: RouteHint, requestID: string, anyway: boolean) =>
    queue.run(conversationID, async () => {
      const entry = await live.load(conversationID);
      const state = entry.state.committed;
      const branch = entry.branch ?? null;
      const last = state.turnStarts?.at(-1);
      if (
        hint.lastTurnOrigin !== null &&
        last !== undefined &&
        last.turn === state.turnCount &&
        last.origin === hint.lastTurnOrigin
      ) {
        return { state, branch, decision: CONTINUE_LAST as RewindDecision | null };
      }
      const knows =
        hint.lastTurnOrigin === null ||
        (state.turnStarts ?? []).some((start) => start.origin === hint.lastTurnOrigin);
      const decision =
        !knows && !anyway
          ? null
          : toRewind(state, {
              lastTurnOrigin: hint.lastTurnOrigin,
              messageID: hint.messageID,
              origin: requestID,
            });
      return { state, branch, decision };
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

  /** The decision for the client's conversation `clientID`: on it, its latest branch, or the binding's. */
  async function find(clientID: string, hint: RouteHint, requestID: string) {
    const onClient = await decide(clientID, hint, requestID, false);
    if (onClient.decision === CONTINUE_LAST) return onClient;
    // The client is most likely on the branch its last start went to: a branch knows the turns it
    // copied, and there a message sent while its first turn ran stays a continuation (R4).
    if (onClient.branch !== null) {
      const onBranch = await decide(onClient.branch, hint, requestID, false);
      if (onBranch.decision !== null) return onBranch;
    }
    if (onClient.decision !== null) return onClient;
    if (hint.lastTurnOrigin === null) return null;
    // Not one of X's turns: the binding of its request names the conversation that ran it.
    const bound = await store.findRequestStream(hint.lastTurnOrigin);
    const other = bound?.conversationID;
    if (other === undefined || other === clientID || !isBranchOf(other, clientID)) return null;
    return decide(other, hint, requestID, true);
  }

  /** Remembers where the client's start went, while its conversation is in memory. */
  const remember = (clientID: string, conversationID: string): void => {
    const entry = live.get(clientID);
    if (entry === undefined) return;
    if (conversationID === clientID) delete entry.branch;
    else entry.branch = conversationID;
  };

  return async (clientID, hint, requestID, branch) => {
    // The client shows turns, but the last one's id could not be read: nothing to go by.
    if (hint.lastTurnOrigin === "") return { conversationID: clientID, reason: "unknown_origin" };
    const found = await find(clientID, hint, requestID);
    if (found === null || found.decision === null) {
      return { conversationID: clientID, reason: "unknown_origin" };
    }
    const { state, decision } = found;
    if (decision.type === "continue" || !branch) {
      if (branch) remember(clientID, state.conversationID);
      // A summarize or a resume goes where the client's last turn ran; only a start branches.
      return decision.type === "continue"
        ? { conversationID: state.conversationID, reason: decision.reason }
        : { conversationID: state.conversationID };
    }
    const branchID = toBranchConversationID(clientID, requestID);
    await makeBranch(state, decision.afterTurn, branchID, requestID);
    remember(clientID, branchID);
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

const CONTINUE_LAST: RewindDecision = { type: "continue", reason: "last_turn" };
