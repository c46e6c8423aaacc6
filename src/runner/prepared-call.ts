/**
 * A model call prepared before the commit of the step that plans it (model-call.ts `prepare`,
 * apply-input.ts), and the call row that commit saves (docs/design.md §7 step 3).
 */
import type { ExactRequest } from "../llm/index.ts";
import type { CallLLMCommand } from "../loop/index.ts";
import type { LLMCallInput } from "../store/index.ts";

/**
 * A call opened before the commit of the step that planned it, held at `beforeSend`: `exact` is
 * its request (null when the stream ended before sending, e.g. the request could not be built);
 * `send` lets it go once the step is committed with the request saved, `drop` ends it unsent.
 */
export interface PreparedCall {
  readonly callID: string;
  /** Null once sent or dropped: the stream lives as long as the model answers, the body need not. */
  exact: ExactRequest | null;
  send(): void;
  drop(): void;
}

/** The call's row as saved before its request is sent (`streaming`: bytes may go up once it is). */
export function toCallRow(
  command: CallLLMCommand,
  conversationID: string,
  turnID: string,
  exact: ExactRequest,
): LLMCallInput {
  return {
    callID: command.callID,
    conversationID,
    turnID,
    model: command.model,
    request: exact.body,
    requestHash: exact.bodyHash,
    messagesHash: command.messagesHash,
    messageCount: command.messageCount,
    lastMessageHash: command.lastMessageHash,
    status: "streaming",
  };
}
