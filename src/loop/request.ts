/**
 * Building the next model request. The system prompt and tools come from the turn's settings
 * (data that entered on the `start` input); the messages are the history, unchanged — or, after a
 * compaction, the summary followed by the history from the compaction's point (compaction.ts).
 */
import type { RequestMessages, Tool } from "../llm/types.ts";
import {
  activeElision,
  chooseCut,
  compactionSettingsOf,
  isOverThreshold,
  lastCompaction,
  toRequestMessages,
  tryElision,
} from "./compaction.ts";
import { hashHistory } from "./history-hash.ts";
import { toCallID } from "./ids.ts";
import { callModel, chooseModel, hasFallbackLeft } from "./model-route.ts";
import { buildSummaryRequest } from "./summary-request.ts";
import { toBatchEnd, toClientCommand, toConcurrentTools, toReadOnlyTools } from "./tool-batch.ts";
import type {
  CallClientCommand,
  CallClientsCommand,
  CallLLMCommand,
  CompactionSettings,
  CompactionTrigger,
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
    messages: toRequestMessages(state),
    tools: buildTools(state),
  };
}

interface StartedCall {
  state: ConversationState;
  command: CallLLMCommand;
}

/** A call that repeats a failed call's request on another model (model-route.ts). */
export interface Failover {
  readonly model: string;
  readonly tried: readonly string[];
  readonly reason: NonNullable<CallLLMCommand["failover"]>;
}

/**
 * Starts the next model call of the turn: the state waits for it and the command carries the
 * complete request with its history hashes. When automatic compaction is on and the estimated
 * request exceeds the threshold, the request first stops re-sending old large tool results when
 * that is enough (an elision record), else a summary call comes first (its `done` then starts
 * this call). The call goes to the conversation's sticky model (model-route.ts), or to
 * `failover.model` when it repeats a call that failed before its first token (the same request:
 * no compaction check).
 */
export function startModelCall(state: ConversationState, failover?: Failover): StartedCall {
  if (failover !== undefined) return startCall(state, {}, failover);
  const compaction = state.settings?.compaction;
  if (compaction?.auto === true && isOverThreshold(state, compaction)) {
    // The cheaper step first: stop re-sending old large tool results, when that is enough.
    const cut = chooseCut(state, compaction);
    const elided = cut === null ? null : tryElision(state, compaction, cut);
    if (elided !== null) return startCall(elided, {});
    const summary = startSummaryCall(state, "threshold");
    if (summary !== null) return summary;
  }
  return startCall(state, {});
}

/** Starts the model call that follows a compaction: a context-length error on it is final. */
export function startModelCallAfterCompaction(state: ConversationState): StartedCall {
  return startCall(state, { afterCompaction: true });
}

/**
 * Starts a summary call that compacts the history up to the chosen cut, or null when there is
 * nothing new to compact.
 */
export function startSummaryCall(
  state: ConversationState,
  trigger: CompactionTrigger,
): StartedCall | null {
  if (state.settings === null) return null;
  const upTo = chooseCut(state, compactionSettingsOf(state.settings));
  if (upTo === null) return null;
  return startCall(state, { summary: { upTo, trigger } });
}

function startCall(
  state: ConversationState,
  kind: { summary?: NonNullable<ConversationState["call"]>["summary"]; afterCompaction?: true },
  failover?: Failover,
): StartedCall {
  const step = state.stepCount;
  const callID = toCallID(state.conversationID, state.turnID, step);
  // Summary calls go to the compaction's model; routing applies to the turn's own calls.
  const model = kind.summary === undefined ? (failover?.model ?? chooseModel(state)) : undefined;
  const call: LLMCall = {
    callID,
    step,
    ...kind,
    ...(model === undefined || model === state.settings?.model ? {} : { model }),
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

/**
 * The command for model call `callID` from the state that waits for it. Its hashes describe the
 * messages it sends: the history's own (kept incrementally) when nothing was compacted, otherwise
 * those of the compacted request, so the prefix relation between two requests stays a hash
 * comparison.
 */
function toCallLLMCommand(state: ConversationState, callID: string): CallLLMCommand {
  const summary = state.call?.summary;
  const settings = state.settings ?? NO_SETTINGS;
  const compaction = compactionSettingsOf(settings);
  const request =
    summary === undefined
      ? buildRequest(state)
      : buildSummaryRequest(state, summary.upTo, compaction);
  const hashes =
    summary === undefined && lastCompaction(state) === null && activeElision(state) === null
      ? state.hashes
      : hashHistory(request.messages);
  // The client's model options apply to the turn's own calls, not to a summary call.
  const options = summary === undefined ? settings.modelOptions : undefined;
  return {
    type: "call_llm",
    callID,
    model: summary === undefined ? callModel(state, state.call) : toSummaryModel(state, compaction),
    ...(options === undefined ? {} : { modelOptions: options }),
    request,
    messagesHash: hashes.chainHash,
    messageCount: request.messages.length,
    lastMessageHash: hashes.lastMessageHash,
    ...(hasFallbackLeft(state) ? { fallbackLeft: true } : {}),
  };
}

/**
 * The model of a summary call: the compaction's. When that is the turn's own model, the model the
 * conversation is on (its sticky model, model-route.ts): a conversation that moved to a fallback
 * because its model fails must not send its summaries back to the failing model. Never routed
 * further (no failover of a summary call).
 */
function toSummaryModel(state: ConversationState, compaction: CompactionSettings): string {
  return compaction.summaryModel === state.settings?.model
    ? chooseModel(state)
    : compaction.summaryModel;
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
    // The same batch the transition planned (tool-result.ts): a run of subagent calls resumes
    // together, or the calls after the first would never be asked again.
    const end = toBatchEnd(
      waiting.calls,
      waiting.answered,
      toReadOnlyTools(state.settings),
      toConcurrentTools(state.settings),
    );
    return toClientCommand(waiting, waiting.answered, end);
  }
  return null;
}
