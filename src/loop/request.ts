/**
 * Building the next model request. The system prompt and tools come from the turn's settings
 * (data that entered on the `start` input); the messages are the history, unchanged.
 */
import type { RequestMessages, Tool } from "../llm/types.ts";
import { toCallID } from "./ids.ts";
import { callModel, chooseModel, hasFallbackLeft } from "./model-route.ts";
import { toBatchEnd, toClientCommand, toReadOnlyTools } from "./tool-batch.ts";
import type {
  CallClientCommand,
  CallClientsCommand,
  CallLLMCommand,
  ConversationState,
  LLMCall,
  TurnSettings,
} from "./types.ts";

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
 * complete request with its history hashes. The call goes to the conversation's sticky model
 * (model-route.ts), or to `failover.model` when it repeats a call that failed before its first
 * token.
 */
export function startModelCall(
  state: ConversationState,
  failover?: {
    readonly model: string;
    readonly tried: readonly string[];
    readonly reason: NonNullable<CallLLMCommand["failover"]>;
  },
): {
  state: ConversationState;
  command: CallLLMCommand;
} {
  const step = state.stepCount;
  const callID = toCallID(state.conversationID, state.turnID, step);
  const model = failover?.model ?? chooseModel(state);
  const call: LLMCall = {
    callID,
    step,
    ...(model === state.settings?.model ? {} : { model }),
    ...(failover === undefined ? {} : { tried: failover.tried }),
  };
  const next: ConversationState = {
    ...state,
    status: "waiting_llm",
    stepCount: step + 1,
    call,
    waiting: null,
  };
  const command = toCallLLMCommand(next, callID);
  return {
    state: next,
    command: failover === undefined ? command : { ...command, failover: failover.reason },
  };
}

/** The command for model call `callID` from the state that waits for it. */
function toCallLLMCommand(state: ConversationState, callID: string): CallLLMCommand {
  return {
    type: "call_llm",
    callID,
    model: callModel(state, state.call),
    request: buildRequest(state),
    messagesHash: state.hashes.chainHash,
    messageCount: state.messages.length,
    lastMessageHash: state.hashes.lastMessageHash,
    ...(hasFallbackLeft(state) ? { fallbackLeft: true } : {}),
  };
}

/**
 * What a runner must do to continue a turn a stopped process left unfinished: repeat the model
 * call the state waits for (same call id; the runner sends its saved request), or ask the client
 * again for the tool calls of the batch in flight that have no result yet (each operation's
 * exactly-once rule then applies to it alone). `null` when the state waits for nothing.
 */
export function toResumeCommand(
  state: ConversationState,
): CallLLMCommand | CallClientCommand | CallClientsCommand | null {
  if (state.status === "waiting_llm" && state.call !== null) {
    return toCallLLMCommand(state, state.call.callID);
  }
  const waiting = state.waiting;
  if (state.status === "waiting_client" && waiting !== null) {
    const end = toBatchEnd(waiting.calls, waiting.answered, toReadOnlyTools(state.settings));
    return toClientCommand(waiting, waiting.answered, end);
  }
  return null;
}
