/**
 * Rewinds (docs/protocol.md "Rewinds"): a client that goes back to an earlier point of a
 * conversation — the Cursor IDE when the user edits an earlier message and sends it again, or
 * restores a checkpoint and sends from there — sends the same conversation id with the state it
 * had at that point, i.e. only the turns before the edited message. History is append-only
 * (docs/design.md §4.1), so a rewind never deletes: the new turn runs on a **branch**, a new
 * conversation whose history is a copy of the source's up to the end of that earlier turn.
 *
 * Two pure functions: `toRewind` decides from the source's turn records (`turnStarts`, appended
 * by every turn at its start) whether a start is a rewind and to which turn; `toBranchState` is
 * the branch's first committed state. The runner loads, commits and routes.
 */
import { hash as digest } from "node:crypto";
import { append } from "./append.ts";
import { hashHistory } from "./history-hash.ts";
import { BRANCH_MARK, SUBAGENT_MARK, toTurnID, toTurnNumberOfCall } from "./ids.ts";
import { isIdle } from "./state.ts";
import type { ConversationState, Message, SeenContext, TurnStartRecord } from "./types.ts";

/**
 * Turn records kept per conversation, the newest: a rewind further back than this many turns is
 * not done. Each record is ~120 bytes of the state JSON written at every commit (issue #19): 50
 * of them add ~6 KB to a ~20 KB state.
 */
export const MAX_TURN_STARTS = 50;

/** `committed.turnStarts` with the record of the turn about to start (turn `turnCount + 1`). */
export function withTurnStart(
  committed: ConversationState,
  ids: { readonly origin?: string | undefined; readonly messageID?: string | undefined },
): readonly TurnStartRecord[] {
  const record: TurnStartRecord = {
    turn: committed.turnCount + 1,
    at: committed.messages.length,
    ...(ids.origin === undefined || ids.origin === "" ? {} : { origin: ids.origin }),
    ...(ids.messageID === undefined || ids.messageID === "" ? {} : { messageID: ids.messageID }),
  };
  const kept = committed.turnStarts ?? [];
  return append(kept.slice(Math.max(0, kept.length + 1 - MAX_TURN_STARTS)), [record]);
}

/** What the client's request says about where it stands. */
export interface RewindHint {
  /** The client's id of the last turn it shows (Cursor: its checkpoint's last turn's request id); null: none. */
  readonly lastTurnOrigin: string | null;
  /** The client's id of the new turn's user message ("" when it gave none). */
  readonly messageID: string;
  /** The client's id of the new turn (a replay of a turn already started carries the same one). */
  readonly origin: string;
}

/** Why a start continues the conversation instead of rewinding it. */
export type ContinueReason =
  /** The client shows every turn: the usual case. */
  | "last_turn"
  /** The conversation has no turns yet. */
  | "no_turns"
  /** The client sent no turns and the message is not the first one sent again (a client without checkpoints). */
  | "no_checkpoint"
  /** The client's last turn is not one of the records (another conversation's, or too old, or saved before records existed). */
  | "unknown_origin"
  /** The start is a replay of a turn already started (same origin). */
  | "replay"
  /**
   * The client lacks only our last turn and the message is a new one: a message sent while that
   * turn ran or as it ended (its checkpoint was taken before the client saw the turn's end).
   */
  | "interrupted_turn"
  /** The turn after the client's last has no record (saved before records existed): where to cut is unknown. */
  | "no_record"
  /** The turns the client lacks appended no messages (e.g. a summarize): the branch would be the same history. */
  | "nothing_dropped";

export type RewindDecision =
  | {
      readonly type: "rewind";
      /** The branch keeps the history up to the end of this turn (0: none). */
      readonly afterTurn: number;
      /** How many messages the branch does not have. */
      readonly dropped: number;
    }
  | { readonly type: "continue"; readonly reason: ContinueReason };

const keep = (reason: ContinueReason): RewindDecision => ({ type: "continue", reason });

/**
 * Whether a start on `state`'s conversation goes back to an earlier turn. Conservative: a false
 * rewind loses the user's context, a missed one leaves the model the turns the user edited away.
 *
 * - The client's last turn is our last turn: continue.
 * - It is our turn k < last, and the new message is the one of a turn after k sent again, or
 *   more than one turn follows k (the client saw the first of them end): rewind to k. Otherwise
 *   the client lacks only our last turn, which may be running, interrupted, or over without the
 *   client having seen its end (a message sent while it ran, whose state was taken before it
 *   ended; a text-only turn's first checkpoint comes at its end): continue.
 * - The client shows no turn: rewind to 0 only when the message is our first turn's sent again
 *   (an edit of the first message); otherwise continue (a client that sends no state).
 * - Anything unknown: continue.
 */
export function toRewind(state: ConversationState, hint: RewindHint): RewindDecision {
  if (state.turnCount === 0) return keep("no_turns");
  const starts = state.turnStarts ?? [];
  const record = (turn: number) => starts.find((start) => start.turn === turn);
  if (hint.origin !== "" && starts.some((start) => start.origin === hint.origin)) {
    return keep("replay");
  }
  let afterTurn: number;
  if (hint.lastTurnOrigin === null) {
    const first = record(1)?.messageID;
    if (first === undefined || first !== hint.messageID) return keep("no_checkpoint");
    afterTurn = 0;
  } else {
    const known = starts.find((start) => start.origin === hint.lastTurnOrigin);
    if (known === undefined) return keep("unknown_origin");
    if (known.turn >= state.turnCount) return keep("last_turn");
    afterTurn = known.turn;
    const sentAgain =
      hint.messageID !== "" &&
      starts.some((start) => start.turn > afterTurn && start.messageID === hint.messageID);
    // Two turns or more the client does not show: it saw the first of them end (a turn starts
    // only after the one before ended, with its checkpoint sent), so it went back. One turn only:
    // that turn may be running, interrupted, or over without the client having seen its end (a
    // text-only turn sends its first checkpoint when it ends; a message sent while its last
    // tokens stream, or a client dropped before its end): only its message sent again says so.
    const endedAfter = state.turnCount - afterTurn > 1;
    if (!sentAgain && !endedAfter) return keep("interrupted_turn");
  }
  const cut = record(afterTurn + 1)?.at;
  if (cut === undefined) return keep("no_record");
  if (cut >= state.messages.length) return keep("nothing_dropped");
  return { type: "rewind", afterTurn, dropped: state.messages.length - cut };
}

/**
 * The first committed state of a branch of `source` that keeps its history up to the end of turn
 * `afterTurn`: the messages before the next turn's first (all of them when `afterTurn` is the
 * source's last turn and it has ended: a fork, fork.ts), with their hashes; the compaction and
 * elision records appended by then; the records of the kept turns. No turn runs on it; what the
 * model has seen of the context (`context`) is what the kept messages show of it (`toSeenIn`).
 * The sticky model (`route`) is
 * dropped: the next turn runs on the model it asks for. `lastCommitID` is `inputID`, the
 * branch's own commit. The messages are marked `copied` (not the branch's model calls), and the
 * branch keeps the source's prompt-cache key (`cacheKeyFrom`). Throws when `afterTurn` is not a turn `toRewind` could have chosen.
 */
export function toBranchState(
  source: ConversationState,
  afterTurn: number,
  branchConversationID: string,
  inputID: string,
): ConversationState {
  const starts = source.turnStarts ?? [];
  // All of it (a fork at the source's last turn, loop/fork.ts): only once that turn has ended.
  const whole = afterTurn === source.turnCount && isIdle(source.status);
  const cut = whole
    ? source.messages.length
    : starts.find((start) => start.turn === afterTurn + 1)?.at;
  if (cut === undefined || afterTurn > source.turnCount) {
    throw new Error(`no record of where turn ${afterTurn + 1} began`);
  }
  const messages = source.messages.slice(0, cut);
  // A compaction is kept when a kept turn made it (its summary call's turn; a summarize turn
  // appends no message, so its record sits exactly at the cut of a rewind to the turn before it,
  // and a user who goes back to before a summary wants the history it replaced). An id that names
  // no turn: kept only when appended before the cut. An elision is appended by a turn's model
  // call after that turn's first message, so its length tells its turn.
  const compactions = (source.compactions ?? []).filter((record) => {
    if (record.upTo > cut) return false;
    const turn = toTurnNumberOfCall(record.callID);
    return turn === null ? record.historyLength < cut : turn <= afterTurn;
  });
  const elisions = (source.elisions ?? []).filter(
    (record) => record.historyLength <= cut && record.upTo <= cut,
  );
  const turnStarts = starts.filter((start) => start.turn <= afterTurn);
  return {
    conversationID: branchConversationID,
    status: afterTurn === 0 ? "ready" : "final",
    turnCount: afterTurn,
    turnID: afterTurn === 0 ? "" : toTurnID(afterTurn),
    settings: source.settings,
    messages,
    hashes: hashHistory(messages),
    stepCount: 0,
    call: null,
    waiting: null,
    context: toSeenIn(messages, source.context),
    ...(compactions.length === 0 ? {} : { compactions }),
    ...(elisions.length === 0 ? {} : { elisions }),
    failure: null,
    lastCommitID: inputID,
    ...(source.parent === undefined ? {} : { parent: source.parent }),
    ...(turnStarts.length === 0 ? {} : { turnStarts }),
    ...(messages.length === 0 ? {} : { copied: messages.length }),
    cacheKeyFrom: source.cacheKeyFrom ?? source.conversationID,
  };
}

/**
 * The id of the branch a client's conversation gets when its request `requestID` rewinds it:
 * stable, so a replayed request finds the branch it made; a branch of a branch is again one of
 * the client's conversation. Its root (subagent.ts `toRootConversationID`) is the client's.
 */
export function toBranchConversationID(clientConversationID: string, requestID: string): string {
  return `${clientConversationID}${BRANCH_MARK}${requestID}`;
}

/** True when `conversationID` is the client's conversation itself or one of its branches (not a subagent's). */
export function isBranchOf(conversationID: string, clientConversationID: string): boolean {
  return (
    conversationID === clientConversationID ||
    (conversationID.startsWith(`${clientConversationID}${BRANCH_MARK}`) &&
      !conversationID.includes(SUBAGENT_MARK))
  );
}

/**
 * What the model has seen of the context on a branch: each entry of the source's (the text last
 * shown for a key, by its hash) whose text is a block of a user message the branch keeps. A key
 * whose last text was shown only in a dropped turn is not seen, so the branch's next turn shows
 * it (context-message.ts); one whose text is still the one shown before the cut is not shown
 * twice. A text shown before the cut and changed after is shown again even when it changed back:
 * a context message more, never one missing.
 */
function toSeenIn(
  messages: readonly Message[],
  seen: readonly SeenContext[],
): readonly SeenContext[] {
  if (seen.length === 0) return seen;
  const shown = new Set<string>();
  for (const message of messages) {
    if (message.role !== "user" || typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type === "text") shown.add(digest("sha256", block.text, "hex"));
    }
  }
  return seen.filter((entry) => shown.has(entry.hash));
}
