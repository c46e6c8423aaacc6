/**
 * Model stream events (docs/design.md §5, event rules). Deltas only touch the in-memory pending
 * response; exactly one assistant message, the one carried by `done`, is appended per model call.
 */
import type { AssistantMessage, ResponseEvent, ToolCall } from "../llm/types.ts";
import { append } from "./append.ts";
import { appendHashes } from "./history-hash.ts";
import { toOperationID } from "./ids.ts";
import { callModel, hasTokens, toFailoverModel, withStickyModel } from "./model-route.ts";
import { applyBlockEvent, createPendingResponse } from "./pending-response.ts";
import { startModelCall } from "./request.ts";
import { CONTINUE_LLM, toApplied, toRejected } from "./state.ts";
import { toRefusedResults } from "./subagent.ts";
import { applySummaryDone, applySummaryError, compactAfterOverflow } from "./summary-call.ts";
import { dispatchNextToolCall, toNotRunResult } from "./tool-result.ts";
import type {
  ConversationState,
  FailureKind,
  LLMEventInput,
  PendingResponse,
  RuntimeState,
  Transition,
} from "./types.ts";

type DoneEvent = Extract<ResponseEvent, { type: "done" }>;
type ErrorEvent = Extract<ResponseEvent, { type: "error" }>;

export function applyLLMEvent(state: RuntimeState, input: LLMEventInput): Transition {
  const { committed, pending } = state;
  const current = committed.status === "waiting_llm" ? committed.call : null;
  if (current === null || current.callID !== input.callID) {
    const finished = committed.call?.callID === input.callID;
    return toRejected(
      state,
      finished ? "call_finished" : "other_call",
      `${input.event.type} for ${finished ? "finished" : "other"} call ${input.callID}`,
    );
  }
  const event = input.event;
  // A summary call's stream is not the assistant's answer: nothing of it is emitted.
  const shown = (events: ResponseEvent[]) => (current.summary === undefined ? events : []);
  switch (event.type) {
    case "start":
      if (pending !== null) return toRejected(state, "out_of_order", "second start", CONTINUE_LLM);
      return toApplied(
        { committed, pending: createPendingResponse(input.callID, event) },
        CONTINUE_LLM,
        shown([event]),
      );
    case "done":
      if (current.summary !== undefined) {
        return applySummaryDone(committed, input.callID, current.summary, event);
      }
      // A response came: its model is the conversation's from now on (model-route.ts).
      return applyDone(
        withStickyModel(committed, callModel(committed, current)),
        input.callID,
        event,
      );
    case "error":
      if (current.summary !== undefined) return applySummaryError(committed, input.callID, event);
      if (input.contextOverflow === true && event.reason === "error") {
        const compacting = compactAfterOverflow(committed, current);
        if (compacting !== null) return compacting;
      }
      return applyError(committed, pending, input.callID, event, input.failure);
    default: {
      if (pending === null) {
        return toRejected(state, "out_of_order", `${event.type} before start`, CONTINUE_LLM);
      }
      const next = applyBlockEvent(pending, event);
      if (typeof next === "string") return toRejected(state, "out_of_order", next, CONTINUE_LLM);
      return toApplied({ committed, pending: next }, CONTINUE_LLM, shown([event]));
    }
  }
}

function applyDone(committed: ConversationState, callID: string, event: DoneEvent): Transition {
  const message = event.message;
  const problem = findProblem(event);
  if (problem !== null) {
    const failure = { callID, reason: "invalid_response", message: problem } as const;
    return toApplied(
      {
        committed: { ...committed, status: "failed", failure, lastCommitID: callID },
        pending: null,
      },
      { type: "failed", message: { ...message, stopReason: "error", errorMessage: problem } },
    );
  }
  const toolCalls = message.content.filter((block): block is ToolCall => block.type === "toolCall");
  const appended: ConversationState = {
    ...committed,
    messages: append(committed.messages, [message]),
    hashes: appendHashes(committed.hashes, [message]),
    lastCommitID: callID,
  };
  const emit = [event];

  if (toolCalls.length > 0 && event.reason === "length") {
    // The response was cut off: its tool calls may be incomplete, so none is run. Each still gets
    // a result, so the next request holds a valid history.
    const results = toolCalls.map((call) =>
      toNotRunResult(
        call,
        "Not run: the response reached the output token limit before this tool call was complete.",
        message.timestamp,
      ),
    );
    return toApplied(
      {
        committed: {
          ...appended,
          status: "final",
          messages: append(appended.messages, results),
          hashes: appendHashes(appended.hashes, results),
        },
        pending: null,
      },
      { type: "final", message },
      emit,
    );
  }
  if (toolCalls.length > 0) {
    // `stop` with tool calls is treated as `toolUse`: some OpenAI-compatible servers report it so.
    const waiting = {
      calls: toolCalls,
      answered: 0,
      // Calls to tools the turn does not offer are answered here when it only runs offered ones.
      early: toRefusedResults(appended.settings, toolCalls, message.timestamp),
      operationIDs: toolCalls.map((call) => toOperationID(callID, call.id)),
    };
    return dispatchNextToolCall({ ...appended, waiting }, emit);
  }
  return toApplied(
    { committed: { ...appended, status: "final" }, pending: null },
    { type: "final", message },
    emit,
  );
}

function applyError(
  committed: ConversationState,
  pending: PendingResponse | null,
  callID: string,
  event: ErrorEvent,
  kind: FailureKind | undefined,
): Transition {
  const aborted = event.reason === "aborted";
  const message = event.error.errorMessage ?? (aborted ? "aborted" : "model call failed");
  const from = callModel(committed, committed.call);
  const fallback = aborted ? null : toFailoverModel(committed, pending, kind);
  if (fallback !== null && kind !== undefined) {
    // Failed before its first token: the same request goes to the next model; the client sees
    // nothing of the failed call but its `start`.
    const { state, command } = startModelCall(
      { ...committed, failure: { callID, reason: "error", message }, lastCommitID: callID },
      {
        model: fallback,
        tried: [...(committed.call?.tried ?? []), from],
        reason: { from, failedCallID: callID, kind, message },
      },
    );
    return toApplied({ committed: state, pending: null }, command);
  }
  // Tokens had come: the conversation stays on this model.
  const base = hasTokens(pending) ? withStickyModel(committed, from) : committed;
  const next: ConversationState = {
    ...base,
    status: aborted ? "canceled" : "failed",
    failure: { callID, reason: aborted ? "aborted" : "error", message },
    lastCommitID: callID,
  };
  return toApplied(
    { committed: next, pending: null },
    aborted ? { type: "canceled", reason: message } : { type: "failed", message: event.error },
    [event],
  );
}

/** Why a `done` cannot be committed, or null when it can. */
function findProblem(event: DoneEvent): string | null {
  if (event.reason === "deferred") return "deferred responses are not supported";
  const message: AssistantMessage | undefined = event.message;
  if (message?.role !== "assistant" || !Array.isArray(message.content)) {
    return "done without an assistant message";
  }
  const ids = new Set<string>();
  for (const block of message.content) {
    if (block.type !== "toolCall") continue;
    if (typeof block.id !== "string" || block.id === "") return "a tool call has no id";
    if (ids.has(block.id)) return `tool call id ${block.id} appears twice`;
    ids.add(block.id);
  }
  return null;
}
