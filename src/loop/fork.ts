/**
 * Forks (docs/protocol.md "Rewinds"): the Cursor IDE forks or duplicates a chat (and runs
 * best-of-N) on the client. It clones the chat under a NEW conversation id, and the clone's first
 * start carries the source's state at the fork point: the same turns, with the request ids the
 * source's turns ran under. This server has no history for the new id; the model would forget
 * everything the user sees. The new conversation gets, as its first commit, a copy of the
 * source's history up to the end of the turn the client shows last — the same copy as a rewind's
 * branch (rewind.ts `toBranchState`) — and the new message runs on it.
 *
 * When no conversation here ran those turns (a chat started on Cursor's own backend, or a wiped
 * database), the client's own record of them, read by the dialect, becomes the history instead
 * (`toImportState`): best effort, but the model sees what the user sees.
 *
 * `toFork` decides from the new conversation's state, the client's last turn and what the runner
 * found of the conversation that ran that turn (the store's binding of its request id); the
 * runner reads the store, checks who may see the source, and commits `toBranchState` (or
 * `toImportState`).
 */
import { hashHistory } from "./history-hash.ts";
import { toTurnID, toTurnNumber } from "./ids.ts";
import { MAX_TURN_STARTS } from "./rewind.ts";
import { isIdle } from "./state.ts";
import type { ConversationState, Message, TurnStartRecord } from "./types.ts";

/**
 * One turn of the client's own record of the conversation (Cursor: a checkpoint turn), in history
 * form: its user message, then the assistant's messages and tool results. Best effort (the
 * dialect's reader, transport/cursor/checkpoint-import.ts): text, tool calls with their results;
 * no thinking, no context.
 */
export interface ImportedTurn {
  /** The client's id of the turn (Cursor: its request id); "" when it has none. */
  readonly origin: string;
  readonly messages: readonly Message[];
}

/** What the runner found of the conversation that ran the client's last turn. */
export type ForkSource =
  /**
   * No conversation here ran it: a chat started elsewhere (Cursor's backend), or a wiped store.
   * `imported`: the client's turns as it sent them, oldest first (empty: none readable).
   */
  | { readonly type: "unknown"; readonly imported: readonly ImportedTurn[] }
  /** Another user's (team mode): never copied, never read. */
  | { readonly type: "not_visible"; readonly conversationID: string }
  | {
      readonly type: "known";
      readonly state: ConversationState;
      /**
       * The turn the binding of the client's last turn's request id names (the store's
       * `RequestStream.turnID`), when one was saved. It decides when the source's turn records
       * do not know that id: a resume request (a window reload while the turn ran) took the turn
       * over, and the client's checkpoints name the turn by the resume request's id.
       */
      readonly boundTurnID?: string | null;
    };

/** Why a start on a new conversation copies nothing. */
export type NoForkReason =
  /** The conversation has history already: a continuation (or a replay of the fork's start). */
  | "has_history"
  /** The client shows no turns: a new chat. */
  | "no_turns"
  /** The client shows turns, but the last one's id could not be read. */
  | "unreadable_turn"
  /** No conversation here ran the client's last turn, and none of its turns could be read. */
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
  | {
      /** The client's turns become the conversation's history (no conversation here ran them). */
      readonly type: "import";
      readonly turns: number;
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
 * - No conversation here ran it: the client's own turns (`imported`) become the history, when
 *   any could be read (a chat started on Cursor's own backend, or a wiped store).
 * - The source ran the client's last turn k (its records know it; or, when they do not, the
 *   binding of its request id names turn k: a resume request that took the turn over): copy up
 *   to the end of turn k when turn k has ended (a later turn of the source may run: what it adds
 *   is not copied). When
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
  if (source.type === "unknown") {
    const messages = source.imported.reduce((sum, turn) => sum + turn.messages.length, 0);
    return messages === 0
      ? none("unknown_source")
      : { type: "import", turns: source.imported.length, messages };
  }
  if (source.type === "not_visible") return none("not_visible");
  const { state } = source;
  const starts = state.turnStarts ?? [];
  const turn =
    starts.find((start) => start.origin === lastTurnOrigin)?.turn ??
    toTurnNumber(source.boundTurnID ?? "");
  if (turn === null || turn > state.turnCount) return none("unknown_origin");
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

/**
 * The first committed state of a conversation whose history is the client's own turns
 * (`toFork` → `import`): each turn's messages in order, a turn record per turn (its origin, so the
 * client's next start is a continuation and an edit of an imported turn is a rewind), the newest
 * `MAX_TURN_STARTS` kept; idle after the last turn; nothing seen of the context (the next turn
 * shows it); no settings (the start brings them); the messages marked `copied` (no model call
 * here made them). Its own prompt-cache key (no request of ours ever began with this history).
 * `lastCommitID` is `inputID`.
 */
export function toImportState(
  conversationID: string,
  turns: readonly ImportedTurn[],
  inputID: string,
): ConversationState {
  const messages: Message[] = [];
  const records: TurnStartRecord[] = [];
  for (const [index, turn] of turns.entries()) {
    records.push({
      turn: index + 1,
      at: messages.length,
      ...(turn.origin === "" ? {} : { origin: turn.origin }),
    });
    messages.push(...turn.messages);
  }
  const turnStarts = records.slice(-MAX_TURN_STARTS);
  return {
    conversationID,
    status: turns.length === 0 ? "ready" : "final",
    turnCount: turns.length,
    turnID: turns.length === 0 ? "" : toTurnID(turns.length),
    settings: null,
    messages,
    hashes: hashHistory(messages),
    stepCount: 0,
    call: null,
    waiting: null,
    context: [],
    failure: null,
    lastCommitID: inputID,
    ...(turnStarts.length === 0 ? {} : { turnStarts }),
    ...(messages.length === 0 ? {} : { copied: messages.length }),
  };
}
