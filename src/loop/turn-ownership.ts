/**
 * Who may act on a running turn (docs/architecture.md, The runner). Streams are compared by
 * identity only, so the rules hold for any client protocol.
 *
 * - A new message supersedes the running turn: a `start` or `user_message` while the
 *   conversation is not idle is preceded by a cancel of that turn.
 * - Only the stream that carries the turn may cancel it: a cancel that arrives late on an earlier
 *   stream must not stop the turn that superseded it.
 * - A stream may resume only its own turn, and not one another stream carries.
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

/**
 * Whether `stream` may resume the conversation's turn: `turnID` (when given) must be the current
 * turn, and no other stream may carry it.
 */
export function mayResume<Stream>(
  state: ConversationState,
  carrier: Stream | null,
  stream: Stream,
  turnID?: string,
): TurnAccess {
  if (turnID !== undefined && state.turnID !== turnID) {
    return { type: "refused", reason: "other_turn" };
  }
  return mayCancel(carrier, stream);
}
