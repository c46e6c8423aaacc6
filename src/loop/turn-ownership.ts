/**
 * Who may act on a running turn (docs/architecture.md, The runner). Streams are compared by
 * identity only, so the rules hold for any client protocol.
 *
 * - A new message supersedes the running turn: a `start` or `user_message` while the
 *   conversation is not idle is preceded by a cancel of that turn.
 * - Only the stream that carries the turn may cancel it: a cancel that arrives late on an earlier
 *   stream must not stop the turn that superseded it.
 * - A stream may resume only its own turn, and not one another live stream carries: a carrier
 *   nobody reads (its client went away and it only waits out its reconnect grace, or nobody ever
 *   subscribed) is taken over by the resuming stream (a client that re-attaches on a new stream,
 *   e.g. the IDE after a window reload). A carrier with a reader keeps its turn.
 */
import { isIdle } from "./state.ts";
import type { CancelInput, ConversationState, StartInput, UserMessageInput } from "./types.ts";

export const SUPERSEDED_REASON = "superseded by a new message";

/** The cancel to apply before `input`, or null when no turn runs. */
export function toSupersedingCancel(
  state: ConversationState,
  input: StartInput | UserMessageInput,
): CancelInput | null {
  if (isIdle(state.status)) return null;
  return {
    type: "cancel",
    inputID: `${input.inputID}:supersede`,
    at: input.at,
    reason: SUPERSEDED_REASON,
  };
}

export type TurnAccess =
  | { readonly type: "allowed" }
  | { readonly type: "refused"; readonly reason: "other_stream" | "other_turn" };

/** Whether `stream` may cancel the turn that `carrier` (null: no stream) carries. */
export function mayCancel<Stream>(carrier: Stream | null, stream: Stream): TurnAccess {
  return carrier !== null && carrier !== stream
    ? { type: "refused", reason: "other_stream" }
    : { type: "allowed" };
}

/** What a resume may do: `take_over` when it takes the turn from a carrier nobody reads. */
export type ResumeAccess = TurnAccess | { readonly type: "take_over" };

export interface ResumeCheck {
  /** Resume only this turn. */
  readonly turnID?: string;
  /** Nobody reads the carrier (no subscriber: its reader left, or never came). */
  readonly carrierDetached?: boolean;
}

/**
 * Whether `stream` may resume the conversation's turn: `turnID` (when given) must be the current
 * turn, and another stream may carry it only when nobody reads that stream (`take_over`).
 */
export function mayResume<Stream>(
  state: ConversationState,
  carrier: Stream | null,
  stream: Stream,
  options: ResumeCheck = {},
): ResumeAccess {
  if (options.turnID !== undefined && state.turnID !== options.turnID) {
    return { type: "refused", reason: "other_turn" };
  }
  const access = mayCancel(carrier, stream);
  return access.type === "refused" && options.carrierDetached === true
    ? { type: "take_over" }
    : access;
}
