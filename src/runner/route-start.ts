/**
 * Which conversation a client's start goes to (loop/rewind.ts, docs/protocol.md "Rewinds"): the
 * client names its conversation X and tells where it stands (`RouteHint`: the id of the last turn
 * it shows, its message's id). Usually that is X's last turn: X, decided from X's records in
 * memory, without a store read. Otherwise `toRewind` decides on the first of these whose records
 * know that turn:
 * - the branch of X the client is most likely on: the one its last applied start went to
 *   (remembered on X's cache entry), or, when nothing is remembered (X's entry evicted, a restart,
 *   another instance) and X alone would branch or does not know the turn, X's newest branch in
 *   the store (one read of the primary key's range `X~edit~`). So a message sent while a branch's
 *   first turn runs (its checkpoint still ends at a turn copied from X) stays on that branch, and
 *   a replay of it is a duplicate there, not a second branch;
 * - X itself;
 * - the conversation the store's binding of the turn's request id names, when it is a branch of X
 *   (an older branch, after a restart).
 * A turn none of them knows goes to that branch when X has one (X is the history from before the
 * edit), else to X. A continuation goes to the conversation decided on; a rewind makes a branch
 * `X~edit~<request id>` whose first state (`toBranchState`) is committed here, as version 1 of
 * the branch under the input id `<request id>:branch`, so a replayed request finds the branch it
 * made and makes no second one.
 *
 * A start on a conversation with no history whose client shows turns (a fork or duplicate made
 * in the IDE, loop/fork.ts) reads the binding of the client's last turn's request id; when the
 * request may see the conversation it names (`mayCopy`: team users see only their own), X's
 * first commit, under `<request id>:fork`, is that conversation's history up to that turn
 * (`toBranchState`), and the start runs on it; when no conversation here ran that turn, the
 * client's own turns (`RouteHint.imported`) are X's first commit instead (`toImportState`). A
 * replay then finds X with history: a duplicate.
 * A new chat (no turns shown) and every start on a conversation with history read nothing more.
 *
 * Each conversation is read and written inside its own queue step; no step waits for another
 * conversation's queue.
 */
import {
  type ConversationState,
  type ForkSource,
  isBranchOf,
  isIdle,
  type RewindDecision,
  SUBAGENT_MARK,
  toBranchConversationID,
  toBranchState,
  toFork,
  toImportState,
  toRewind,
} from "../loop/index.ts";
import type { Store } from "../store/index.ts";
import { type ConversationCache, isIdleHere } from "./conversation-cache.ts";
import type { SerialQueue } from "./serial-queue.ts";
import type { Routed, RouteHint } from "./types.ts";

export interface RouteStartDeps {
  readonly store: Pick<Store, "findRequestStream" | "findNewestConversation" | "commitInput">;
  readonly queue: SerialQueue;
  readonly live: ConversationCache;
  /** Whether the request may see a conversation's history (RunnerOptions `mayCopy`). */
  readonly mayCopy: (conversationID: string) => Promise<boolean>;
}

export interface RouteStart {
  /**
   * Routes a start (`branch`: it may make a branch) or a summarize (only follows the client to
   * the branch it is on) of the client's conversation `clientID`, sent as request `requestID`.
   */
  route(clientID: string, hint: RouteHint, requestID: string, branch: boolean): Promise<Routed>;
  /**
   * Remembers, on the client's cache entry while it is in memory, that its start went to
   * `conversationID`. Called once the start was applied, not for a duplicate: a replay of an
   * earlier request must not point it back at an older branch.
   */
  remember(clientID: string, conversationID: string): void;
}

export function createRouteStart(deps: RouteStartDeps): RouteStart {
  const { store, queue, live, mayCopy } = deps;

  /**
   * The decision on `conversationID`, read in its queue step; `decision` null when its records do
   * not know the client's last turn, unless `anyway` (the binding named it: decide there all the
   * same). `branch`: the branch the client's last start went to, when known in memory.
   */
  const decide = (
    conversationID: string,
    hint: RouteHint,
    requestID: string,
    anyway: boolean,
  ): Promise<Decided> =>
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

  /**
   * Commits the first state of `copyID`, a copy of `source` up to the end of `afterTurn` (a
   * rewind's branch, or a fork), unless it has a state already (a replay of the request made it,
   * or another instance). `link`: `branch` or `fork`, recorded with the commit's result.
   * Returns whether this call made it.
   */
  const makeCopy = (
    source: ConversationState,
    afterTurn: number,
    copyID: string,
    inputID: string,
    link: "branch" | "fork",
  ): Promise<boolean> =>
    makeFirst(copyID, inputID, () => toBranchState(source, afterTurn, copyID, inputID), {
      [link]: { from: source.conversationID, afterTurn },
    });

  /**
   * Commits `state()` as the first state of `conversationID` (version 1, input `inputID`, with
   * `recorded` in the commit's result), unless it has one already. Returns whether this call
   * made it.
   */
  const makeFirst = (
    conversationID: string,
    inputID: string,
    build: () => ConversationState,
    recorded: Record<string, unknown>,
  ): Promise<boolean> =>
    queue.run(conversationID, async () => {
      const entry = await live.load(conversationID);
      if (entry.version > 0) return false;
      const state = build();
      const result = await store.commitInput({
        inputID,
        expectedVersion: 0,
        state,
        result: { command: "wait_input", rejected: null, ...recorded },
      });
      if (result.type === "committed") {
        entry.state = { committed: state, pending: null };
        entry.version = result.commit.version;
        return true;
      }
      // Made meanwhile (another instance, a replay): what was committed is the copy.
      await live.reload(entry);
      return false;
    });

  /**
   * A start on a conversation with no history whose client shows turns (loop/fork.ts): the
   * conversation that ran the client's last turn (the store's binding of its request id) is
   * copied up to that turn, when the request may see it; when none did, the client's own turns
   * (`hint.imported`) are imported. The binding, the source and the client's turns are read only
   * on this rare path; the source from the store even when cached here, unless it has work here
   * (another instance may have run its later turns).
   */
  async function fork(
    clientID: string,
    target: ConversationState,
    hint: RouteHint,
    origin: string,
    requestID: string,
  ): Promise<Routed> {
    let source: ForkSource | null = null;
    const bound = origin === "" ? null : await store.findRequestStream(origin);
    const sourceID = bound?.conversationID;
    // A subagent's turns are the server's, never a client's checkpoint's.
    if (sourceID !== undefined && sourceID !== clientID && !sourceID.includes(SUBAGENT_MARK)) {
      source = (await mayCopy(sourceID))
        ? {
            type: "known",
            // The turn the binding names decides when the records do not know the request id
            // (a resume request's: it took the turn over, review-fork #4).
            boundTurnID: bound?.turnID ?? null,
            state: await queue.run(sourceID, async () => {
              const cached = live.get(sourceID);
              // An idle entry may be out of date: with several instances, the source's later
              // turns may have run on another one, and nothing here commits to it to find out
              // (review-fork #1): read it again, on this rare path only. One with work here is
              // the one its commits go through.
              if (cached !== undefined && isIdleHere(cached)) await live.reload(cached);
              return (cached ?? (await live.load(sourceID))).state.committed;
            }),
          }
        : { type: "not_visible", conversationID: sourceID };
    }
    // No conversation here ran it: the client's own turns, read only now (this rare path).
    source ??= { type: "unknown", imported: origin === "" ? [] : (hint.imported?.() ?? []) };
    const decision = toFork(target, origin, source);
    const inputID = `${requestID}:fork`;
    if (decision.type === "import" && source.type === "unknown") {
      const { imported } = source;
      const made = await makeFirst(
        clientID,
        inputID,
        () => toImportState(clientID, imported, inputID),
        { imported: { turns: decision.turns } },
      );
      const { turns, messages } = decision;
      return made
        ? { conversationID: clientID, imported: { turns, messages } }
        : { conversationID: clientID };
    }
    if (decision.type !== "fork" || source.type !== "known") {
      return {
        conversationID: clientID,
        noFork: decision.type === "none" ? decision.reason : "unknown_source",
      };
    }
    const { from, afterTurn, messages } = decision;
    const made = await makeCopy(source.state, afterTurn, clientID, inputID, "fork");
    return made
      ? { conversationID: clientID, fork: { from, afterTurn, messages } }
      : { conversationID: clientID };
  }

  /**
   * X's newest branch in the store (by creation), or null: read only when nothing is remembered
   * (X's entry was evicted, the process restarted, the client's last start ran on another
   * instance) and X alone would branch or does not know the client's last turn.
   */
  const newestBranch = (clientID: string): Promise<string | null> =>
    store.findNewestConversation(toBranchConversationID(clientID, ""), SUBAGENT_MARK);

  /**
   * The decision for the client's conversation `clientID`: on it, on the branch it is most likely
   * on, or on the binding's; `found` null when none knows the client's last turn. `branchID`: the
   * branch consulted (remembered or newest), where an unknown turn goes.
   */
  async function find(clientID: string, hint: RouteHint, requestID: string, onClient: Decided) {
    if (onClient.decision === CONTINUE_LAST) return { found: onClient, branchID: null };
    // The client is most likely on the branch its last start went to: a branch knows the turns it
    // copied, and there a message sent while its first turn ran stays a continuation (R4). On X,
    // the copied turn k has later (edited-away) turns, so X alone would make a second branch.
    let branchID = onClient.branch;
    if (branchID === null && (onClient.decision === null || onClient.decision.type === "rewind")) {
      branchID = await newestBranch(clientID);
    }
    if (branchID !== null) {
      const onBranch = await decide(branchID, hint, requestID, false);
      if (onBranch.decision !== null) return { found: onBranch, branchID };
    }
    if (onClient.decision !== null || hint.lastTurnOrigin === null) {
      return { found: onClient, branchID };
    }
    // Not one of X's turns: the binding of its request names the conversation that ran it.
    const bound = await store.findRequestStream(hint.lastTurnOrigin);
    const other = bound?.conversationID;
    if (other === undefined || other === clientID || !isBranchOf(other, clientID)) {
      return { found: null, branchID };
    }
    return { found: await decide(other, hint, requestID, true), branchID };
  }

  /**
   * Where an unknown last turn goes: the branch the client is most likely on (remembered, else the
   * newest), never back to X once X has one (X holds the history from before the edit).
   */
  const unknown = (clientID: string, branchID: string | null): Routed => ({
    conversationID: branchID ?? clientID,
    reason: "unknown_origin",
  });

  const route: RouteStart["route"] = async (clientID, hint, requestID, branch) => {
    const onClient = await decide(clientID, hint, requestID, false);
    const target = onClient.state;
    if (
      branch &&
      hint.lastTurnOrigin !== null &&
      target.turnCount === 0 &&
      target.messages.length === 0
    ) {
      // A new conversation whose client shows turns: a fork, or a chat started elsewhere.
      return fork(clientID, target, hint, hint.lastTurnOrigin, requestID);
    }
    // The client shows turns, but the last one's id could not be read: nothing to go by.
    if (hint.lastTurnOrigin === "") {
      return unknown(clientID, live.get(clientID)?.branch ?? (await newestBranch(clientID)));
    }
    const { found, branchID } = await find(clientID, hint, requestID, onClient);
    if (found === null || found.decision === null) return unknown(clientID, branchID);
    const { state, decision } = found;
    if (decision.type === "continue" || !branch) {
      // A summarize or a resume goes where the client's last turn ran; only a start branches.
      return decision.type === "continue"
        ? { conversationID: state.conversationID, reason: decision.reason }
        : { conversationID: state.conversationID };
    }
    const branchOut = toBranchConversationID(clientID, requestID);
    await makeCopy(state, decision.afterTurn, branchOut, `${requestID}:branch`, "branch");
    return {
      conversationID: branchOut,
      rewind: {
        from: state.conversationID,
        fromTurn: state.turnCount,
        afterTurn: decision.afterTurn,
        dropped: decision.dropped,
        running: !isIdle(state.status),
      },
    };
  };

  return {
    route,
    remember(clientID, conversationID) {
      const entry = live.get(clientID);
      if (entry === undefined) return;
      if (conversationID === clientID) delete entry.branch;
      else entry.branch = conversationID;
    },
  };
}

const CONTINUE_LAST: RewindDecision = { type: "continue", reason: "last_turn" };

/** A decision read on one conversation (`decide`). */
interface Decided {
  readonly state: ConversationState;
  readonly branch: string | null;
  readonly decision: RewindDecision | null;
}
