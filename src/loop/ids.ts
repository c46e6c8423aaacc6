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

/** The id of model call `step` (0-based) of a turn. */
export function toCallID(conversationID: string, turnID: string, step: number): string {
  return `${part(conversationID)}:${part(turnID)}:c${step}`;
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
