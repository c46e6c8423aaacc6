/**
 * Building the next model request. The system prompt and tools come from the turn's settings
 * (data that entered on the `start` input); the messages are the history, unchanged.
 */
import type { RequestMessages, Tool } from "../llm/types.ts";
import { toCallID } from "./ids.ts";
import type { CallLLMCommand, ConversationState, TurnSettings } from "./types.ts";

const NO_SETTINGS: TurnSettings = { model: "", systemPrompt: "", tools: [] };

export function buildPrompt(state: ConversationState): string {
  return (state.settings ?? NO_SETTINGS).systemPrompt;
}

export function buildTools(state: ConversationState): Tool[] {
  return [...(state.settings ?? NO_SETTINGS).tools];
}

export function buildRequest(state: ConversationState): RequestMessages {
  return {
    systemPrompt: buildPrompt(state),
    messages: [...state.messages],
    tools: buildTools(state),
  };
}

/**
 * Starts the next model call of the turn: the state waits for it and the command carries the
 * complete request with its history hashes.
 */
export function startModelCall(state: ConversationState): {
  state: ConversationState;
  command: CallLLMCommand;
} {
  const step = state.stepCount;
  const callID = toCallID(state.conversationID, state.turnID, step);
  const next: ConversationState = {
    ...state,
    status: "waiting_llm",
    stepCount: step + 1,
    call: { callID, step },
    waiting: null,
  };
  return {
    state: next,
    command: {
      type: "call_llm",
      callID,
      model: (state.settings ?? NO_SETTINGS).model,
      request: buildRequest(next),
      messagesHash: next.hashes.chainHash,
      messageCount: next.messages.length,
      lastMessageHash: next.hashes.lastMessageHash,
    },
  };
}
