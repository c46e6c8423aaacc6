/**
 * Ids the loop creates, derived only from state so that replaying the same inputs yields the
 * same ids (docs/design.md §4.2). Components are URI-encoded, so no two different tuples share an
 * id.
 */

const part = encodeURIComponent;

/** The id of the n-th turn (1-based) of a conversation. */
export function toTurnID(turnNumber: number): string {
  return `t${turnNumber}`;
}

/** The turn number of a turn id (`toTurnID`), or null when `turnID` is not one. */
export function toTurnNumber(turnID: string): number | null {
  const turn = /^t([1-9][0-9]*)$/.exec(turnID);
  return turn === null ? null : Number(turn[1]);
}

/** The id of model call `step` (0-based) of a turn. */
export function toCallID(conversationID: string, turnID: string, step: number): string {
  return `${part(conversationID)}:${part(turnID)}:c${step}`;
}

/**
 * The turn number of a model call's id (`toCallID`), or null when `callID` is not one: its middle
 * component, URI-encoded like the others, is the turn id.
 */
export function toTurnNumberOfCall(callID: string): number | null {
  const parts = callID.split(":");
  return parts.length === 3 ? toTurnNumber(decodeURIComponent(parts[1] as string)) : null;
}

/**
 * The id of the client operation that runs one tool call (docs/design.md §8). It includes the model
 * call that produced the tool call, because some providers reuse ids such as `call_0` across calls.
 */
export function toOperationID(callID: string, toolCallID: string): string {
  return `${callID}:${part(toolCallID)}`;
}

/** Marks a subagent's conversation id: `<parent>~task~<digest>` (subagent.ts). */
export const SUBAGENT_MARK = "~task~";

/** Marks a branch of a client's conversation: `<client's id>~edit~<request id>` (rewind.ts). */
export const BRANCH_MARK = "~edit~";
