/**
 * Which records a committed step writes besides the state (docs/architecture.md, The runner), as
 * a function of the state before the step and the step itself:
 *
 * - each tool call about to be sent (one, or a batch) is saved as a planned client operation
 *   (before it is sent);
 * - a model call the step ended gets its final status: `canceled` or `failed` when the turn
 *   ended so, `failed` when a context-length error made way for a summary call, `committed`
 *   otherwise (its response is in history, or for a summary call in the compaction record);
 * - a cancel while the client works cancels the tool calls not yet answered.
 *
 * Status records name rows the store may not have (a call or operation from before they were
 * saved); the runner writes those only for rows that exist.
 */
import type { ConversationState, ToolCall, Transition } from "./types.ts";

export type StepRecord =
  | {
      readonly type: "client_operation";
      readonly operation: {
        readonly operationID: string;
        readonly conversationID: string;
        readonly turnID: string;
        readonly toolCallID: string;
        readonly request: ToolCall;
        readonly status: "planned";
      };
    }
  | {
      readonly type: "llm_call_status";
      readonly callID: string;
      readonly status: "committed" | "failed" | "canceled";
    }
  | {
      readonly type: "client_operation_status";
      readonly operationID: string;
      readonly status: "canceled";
    };

export function toStepRecords(before: ConversationState, step: Transition): StepRecord[] {
  const records: StepRecord[] = [];
  const after = step.state.committed;
  const sent =
    step.command.type === "call_client"
      ? [step.command]
      : step.command.type === "call_clients"
        ? step.command.calls
        : [];
  for (const command of sent) {
    records.push({
      type: "client_operation",
      operation: {
        operationID: command.operationID,
        conversationID: after.conversationID,
        turnID: after.turnID,
        toolCallID: command.toolCall.id,
        request: command.toolCall,
        status: "planned",
      },
    });
  }
  // A call ends when the state stops waiting for it: the turn moved on, or another call replaced
  // it (a summary call's compaction, a context-length error that starts one, or a failover to
  // another model, loop/model-route.ts).
  const ended =
    before.status === "waiting_llm" &&
    before.call !== null &&
    (after.status !== "waiting_llm" || after.call?.callID !== before.call.callID);
  if (ended && before.call !== null) {
    const replacedAfterError = after.status === "waiting_llm" && before.call.summary === undefined;
    const status =
      after.status === "canceled"
        ? "canceled"
        : after.status === "failed" || replacedAfterError
          ? "failed"
          : "committed";
    records.push({ type: "llm_call_status", callID: before.call.callID, status });
  }
  if (before.status === "waiting_client" && after.status === "canceled" && before.waiting) {
    for (const operationID of before.waiting.operationIDs.slice(before.waiting.answered)) {
      records.push({ type: "client_operation_status", operationID, status: "canceled" });
    }
  }
  return records;
}
