/**
 * The end of a summary call, and the compaction after a context-length error (docs/compaction.md;
 * rows L35–L40 of README.md).
 *
 * - A summary call's `done` appends one compaction record, then starts the model call it was made
 *   for (or ends the turn, when the client asked for the compaction). The record is written only
 *   here, so a failed, canceled or interrupted summary call leaves none.
 * - A summary call's `error` fails the turn with a message that says so; history is unchanged
 *   and the next turn may compact again.
 * - A context-length error of an ordinary call starts a summary call once; the call after that
 *   compaction is not compacted again on the same error.
 */
import type { ResponseEvent } from "../llm/types.ts";
import { compactionsOf } from "./compaction.ts";
import { startModelCallAfterCompaction, startSummaryCall } from "./request.ts";
import { toApplied } from "./state.ts";
import type { Compaction, ConversationState, LLMCall, SummaryCall, Transition } from "./types.ts";

type DoneEvent = Extract<ResponseEvent, { type: "done" }>;
type ErrorEvent = Extract<ResponseEvent, { type: "error" }>;

export const SUMMARY_FAILED =
  "The conversation no longer fits the model's context window and could not be summarised";

export function applySummaryDone(
  committed: ConversationState,
  callID: string,
  call: SummaryCall,
  event: DoneEvent,
): Transition {
  const message = event.message;
  const summary =
    event.reason === "deferred" || message?.role !== "assistant" || !Array.isArray(message.content)
      ? ""
      : message.content
          .map((block) => (block.type === "text" ? block.text : ""))
          .join("")
          .trim();
  if (summary === "") {
    return toSummaryFailure(committed, callID, event, "the summary call returned no text");
  }
  const record: Compaction = {
    callID,
    upTo: call.upTo,
    trigger: call.trigger,
    summary,
    at: message.timestamp,
    historyLength: committed.messages.length,
  };
  const compacted: ConversationState = {
    ...committed,
    compactions: [...compactionsOf(committed), record],
    lastCommitID: callID,
  };
  if (call.trigger === "request") {
    return toApplied(
      { committed: { ...compacted, status: "final" }, pending: null },
      { type: "final", message },
    );
  }
  const next = startModelCallAfterCompaction(compacted);
  return toApplied({ committed: next.state, pending: null }, next.command);
}

export function applySummaryError(
  committed: ConversationState,
  callID: string,
  event: ErrorEvent,
): Transition {
  if (event.reason === "aborted") {
    const message = event.error.errorMessage ?? "aborted";
    return toApplied(
      {
        committed: {
          ...committed,
          status: "canceled",
          failure: { callID, reason: "aborted", message },
          lastCommitID: callID,
        },
        pending: null,
      },
      { type: "canceled", reason: message },
      [event],
    );
  }
  return toSummaryFailure(committed, callID, event, event.error.errorMessage ?? "unknown error");
}

/**
 * After a context-length error of `call`: the summary call that compacts and then repeats it, or
 * null when the turn must fail instead (automatic compaction off, the call already followed a
 * compaction, or nothing new to compact).
 */
export function compactAfterOverflow(
  committed: ConversationState,
  call: LLMCall,
): Transition | null {
  if (committed.settings?.compaction?.auto !== true || call.afterCompaction === true) return null;
  const started = startSummaryCall({ ...committed, lastCommitID: call.callID }, "overflow");
  if (started === null) return null;
  return toApplied({ committed: started.state, pending: null }, started.command);
}

function toSummaryFailure(
  committed: ConversationState,
  callID: string,
  event: DoneEvent | ErrorEvent,
  reason: string,
): Transition {
  const text = `${SUMMARY_FAILED}: ${reason}. Nothing was lost; send the message again to retry.`;
  const base = event.type === "done" ? event.message : event.error;
  return toApplied(
    {
      committed: {
        ...committed,
        status: "failed",
        failure: { callID, reason: "error", message: text },
        lastCommitID: callID,
      },
      pending: null,
    },
    { type: "failed", message: { ...base, stopReason: "error", errorMessage: text } },
    event.type === "error" ? [{ ...event, error: { ...event.error, errorMessage: text } }] : [],
  );
}
