/**
 * A turn's record (`turnStarts`, appended at its start: rewind.ts) names the turn the way the
 * client does (`origin`: Cursor's request id of the run request that started it) and, once the turn
 * is over, keeps how it ended (`end`). A client stream that picks the turn up other than by
 * starting it (a resume request, a reconnect after a restart) takes both from here: its
 * checkpoints name the turn by its own id, not the stream's (docs/protocol.md "Rewinds"), and a
 * stream that comes after the turn ended ends the way the turn did (docs/wire-errors.md).
 */
import { isIdle } from "./state.ts";
import type {
  Command,
  ConversationState,
  Transition,
  TurnEndRecord,
  TurnStartRecord,
} from "./types.ts";

/** The record of the conversation's current (or last) turn; undefined when it has none. */
export function toTurnRecord(state: ConversationState): TurnStartRecord | undefined {
  const record = state.turnStarts?.at(-1);
  return state.turnCount > 0 && record?.turn === state.turnCount ? record : undefined;
}

/**
 * `step` with the end of the turn it ends (a `final`, `failed` or `canceled` command) kept on that
 * turn's record; the end an earlier record kept is dropped, so one end at most is written with
 * every commit. A step that ends no turn, or a turn without a record, is returned as is.
 */
export function withTurnEnd(step: Transition): Transition {
  if (step.rejected !== null) return step;
  const end = toTurnEndRecord(step.command);
  if (end === null) return step;
  const { committed } = step.state;
  const starts = committed.turnStarts;
  if (starts === undefined || toTurnRecord(committed) === undefined) return step;
  const last = starts.length - 1;
  const turnStarts = starts.map((record, i) =>
    i === last ? { ...record, end } : record.end === undefined ? record : withoutEnd(record),
  );
  return { ...step, state: { ...step.state, committed: { ...committed, turnStarts } } };
}

/**
 * The conversation's last turn when it is over (and is `turnID`, when given): its record (the
 * client's id for it) and how it ended. The end is the record's, or for a turn whose record has
 * none (saved before ends were kept) the state's: its status and failure, a cancel's reason
 * unknown. null while a turn runs, before the first turn, or when `turnID` is another turn.
 */
export function toEndedTurn(
  state: ConversationState,
  turnID?: string,
): { readonly record: TurnStartRecord | undefined; readonly end: TurnEndRecord } | null {
  if (state.turnCount === 0 || !isIdle(state.status)) return null;
  if (turnID !== undefined && turnID !== state.turnID) return null;
  const record = toTurnRecord(state);
  const end = record?.end ?? fromStatus(state);
  return end === null ? null : { record, end };
}

function toTurnEndRecord(command: Command): TurnEndRecord | null {
  switch (command.type) {
    case "final":
      return { type: "final" };
    case "failed": {
      const { errorMessage, provider } = command.message;
      return {
        type: "failed",
        ...(errorMessage === undefined ? {} : { message: errorMessage }),
        ...(provider === undefined || provider === "" ? {} : { provider }),
      };
    }
    case "canceled":
      return { type: "canceled", reason: command.reason };
    default:
      return null;
  }
}

function fromStatus(state: ConversationState): TurnEndRecord | null {
  switch (state.status) {
    case "final":
      return { type: "final" };
    case "failed":
      return {
        type: "failed",
        ...(state.failure === null ? {} : { message: state.failure.message }),
      };
    case "canceled":
      return { type: "canceled", reason: "the turn was canceled" };
    default:
      return null;
  }
}

function withoutEnd(record: TurnStartRecord): TurnStartRecord {
  const { end: _dropped, ...rest } = record;
  return rest;
}
