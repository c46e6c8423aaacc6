/**
 * Cancel (docs/design.md §10). Waiting for the model: the pending response is dropped and nothing
 * is appended. Waiting for the client: every tool call still without a result gets an error result
 * saying it was canceled (a result that already arrived is kept), so the next turn's request
 * holds a valid history.
 */

import { append } from "./append.ts";
import { appendHashes } from "./history-hash.ts";
import { callModel, hasTokens, withStickyModel } from "./model-route.ts";
import { isIdle, toApplied, toRejected } from "./state.ts";
import { toNotRunResult } from "./tool-result.ts";
import type { CancelInput, ConversationState, RuntimeState, Transition } from "./types.ts";

export function applyCancel(state: RuntimeState, input: CancelInput): Transition {
  const { committed } = state;
  if (isIdle(committed.status)) {
    return toRejected(state, "not_running", `cancel while ${committed.status}`);
  }
  const command = { type: "canceled", reason: input.reason } as const;
  // A response cut short after its first token still moves the conversation to its model.
  const streamed =
    committed.status === "waiting_llm" &&
    committed.call?.summary === undefined &&
    hasTokens(state.pending)
      ? withStickyModel(committed, callModel(committed, committed.call))
      : committed;
  const canceled: ConversationState = {
    ...streamed,
    status: "canceled",
    waiting: null,
    lastCommitID: input.inputID,
  };
  const waiting = committed.waiting;
  if (committed.status !== "waiting_client" || waiting === null) {
    return toApplied({ committed: canceled, pending: null }, command);
  }
  const results = waiting.calls
    .slice(waiting.answered)
    .map(
      (call, i) =>
        waiting.early[waiting.answered + i] ??
        toNotRunResult(call, "Not run: the user canceled the turn.", input.at),
    );
  return toApplied(
    {
      committed: {
        ...canceled,
        messages: append(committed.messages, results),
        hashes: appendHashes(committed.hashes, results),
      },
      pending: null,
    },
    command,
  );
}
