/**
 * Tool results (docs/design.md §5, tool calls). Results are matched by tool-call id and appended in
 * the order of the assistant message's content, whatever order they arrive in. Calls are dispatched
 * in batches (tool-batch.ts): consecutive read-only calls together, any other call alone; the next
 * batch goes out when every call of the one in flight has its result, and the next model call
 * starts when every call has its result.
 */
import type { ToolCall, ToolResultMessage } from "../llm/types.ts";
import { append } from "./append.ts";
import { appendHashes } from "./history-hash.ts";
import { startModelCall } from "./request.ts";
import { toApplied, toRejected, WAIT_INPUT } from "./state.ts";
import { toBatchEnd, toClientCommand, toConcurrentTools, toReadOnlyTools } from "./tool-batch.ts";
import type {
  ConversationState,
  RuntimeState,
  ToolResultInput,
  Transition,
  WaitingClient,
} from "./types.ts";

export function applyToolResult(state: RuntimeState, input: ToolResultInput): Transition {
  const { committed } = state;
  const waiting = committed.status === "waiting_client" ? committed.waiting : null;
  const id = input.message.toolCallId;
  if (waiting === null) {
    return toRejected(state, "not_waiting_for_tool", `result for ${id} while ${committed.status}`);
  }
  const index = waiting.calls.findIndex((call) => call.id === id);
  if (index < 0) return toRejected(state, "unknown_tool_call", `no outstanding tool call ${id}`);
  if (index < waiting.answered || waiting.early[index] !== null) {
    return toRejected(state, "duplicate_tool_result", `tool call ${id} already has a result`);
  }
  const early = waiting.early.map((result, i) => (i === index ? input.message : result));
  const received = {
    ...committed,
    waiting: { ...waiting, early },
    lastCommitID: input.inputID,
    ...(input.settings === undefined ? {} : { settings: input.settings }),
  };
  if (index > waiting.answered) {
    // Kept until the calls before it are answered; not yet history.
    return toApplied({ committed: received, pending: null }, WAIT_INPUT);
  }
  // The batch in flight was planned with the settings before this result (a mode switch runs
  // alone, so its new settings only shape the batches after it).
  const inFlightEnd = toBatchEnd(
    waiting.calls,
    waiting.answered,
    toReadOnlyTools(committed.settings),
    toConcurrentTools(committed.settings),
  );
  return dispatchNextToolCall(received, [], inFlightEnd);
}

/**
 * Appends every result that is next in order; then, once the batch in flight (the calls before
 * `inFlightEnd`) is answered, asks for the next batch, or calls the model when all are answered.
 * Until then it waits for the rest of the batch.
 */
export function dispatchNextToolCall(
  state: ConversationState & { waiting: WaitingClient },
  emit: Transition["emit"] = [],
  inFlightEnd = state.waiting.answered,
): Transition {
  const { waiting } = state;
  const results: ToolResultMessage[] = [];
  let answered = waiting.answered;
  for (let result = waiting.early[answered]; result; result = waiting.early[answered]) {
    results.push(result);
    answered += 1;
  }
  const appended: ConversationState = {
    ...state,
    messages: results.length > 0 ? append(state.messages, results) : state.messages,
    hashes: results.length > 0 ? appendHashes(state.hashes, results) : state.hashes,
  };
  if (answered >= waiting.calls.length) {
    const next = startModelCall(appended);
    return toApplied({ committed: next.state, pending: null }, next.command, emit);
  }
  const nextWaiting: WaitingClient = {
    ...waiting,
    answered,
    early: waiting.early.map((result, i) => (i < answered ? null : result)),
  };
  const committed: ConversationState = {
    ...appended,
    status: "waiting_client",
    waiting: nextWaiting,
  };
  if (answered < inFlightEnd) {
    // Calls of the batch in flight are still running: their results come as inputs.
    return toApplied({ committed, pending: null }, WAIT_INPUT, emit);
  }
  const end = toBatchEnd(
    waiting.calls,
    answered,
    toReadOnlyTools(state.settings),
    toConcurrentTools(state.settings),
  );
  // Never null: the call at `answered` has no result (else it would have been appended).
  const command = toClientCommand(nextWaiting, answered, end) ?? WAIT_INPUT;
  return toApplied({ committed, pending: null }, command, emit);
}

/** An error result for a tool call that was not run. */
export function toNotRunResult(call: ToolCall, text: string, timestamp: number): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId: call.id,
    toolName: call.name,
    content: [{ type: "text", text }],
    isError: true,
    timestamp,
  };
}
