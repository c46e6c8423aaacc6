import { EMPTY_HISTORY_HASHES } from "./history-hash.ts";
import type {
  Command,
  ConversationState,
  Rejection,
  RuntimeState,
  Status,
  Transition,
} from "./types.ts";

/** The state of a conversation before its first turn. */
export function createConversation(conversationID: string): RuntimeState {
  const committed: ConversationState = {
    conversationID,
    status: "ready",
    turnCount: 0,
    turnID: "",
    settings: null,
    messages: [],
    hashes: EMPTY_HISTORY_HASHES,
    stepCount: 0,
    call: null,
    waiting: null,
    context: [],
    failure: null,
    lastCommitID: "",
  };
  return { committed, pending: null };
}

/** True when no turn runs: a new turn may start. */
export function isIdle(status: Status): boolean {
  return status === "ready" || status === "final" || status === "failed" || status === "canceled";
}

/** A transition that applied the input. */
export function toApplied(
  state: RuntimeState,
  command: Command,
  emit: Transition["emit"] = [],
): Transition {
  return { state, emit, command, rejected: null };
}

/** A transition that did not apply the input: the state is returned unchanged. */
export function toRejected(
  state: RuntimeState,
  reason: Rejection["reason"],
  detail: string,
  command: Command = WAIT_INPUT,
): Transition {
  return { state, emit: [], command, rejected: { reason, detail } };
}

export const WAIT_INPUT: Command = { type: "wait_input" };
export const CONTINUE_LLM: Command = { type: "continue_llm" };
