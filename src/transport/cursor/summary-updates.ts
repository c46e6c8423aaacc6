/**
 * What the client sees of a compaction (docs/compaction.md; interaction updates 9–11 in
 * docs/protocol.md §2.5): `summary_started` when a summary call starts, then `summary`
 * with the summary's text and `summary_completed` when its compaction record is committed. A
 * summary call that fails sends neither of the last two: the turn ends with its error.
 *
 * Derived from the committed state the runner publishes with every step, so it needs no event
 * of its own from the loop.
 */
import { create } from "@bufbuild/protobuf";
import type { ConversationState } from "../../loop/index.ts";
import type { AgentServerMessage } from "./gen/agent/v1/agent_stream_pb.js";
import {
  SummaryCompletedUpdateSchema,
  SummaryStartedUpdateSchema,
  SummaryUpdateSchema,
} from "./gen/agent/v1/interaction_update_pb.js";
import { toUpdateMessage } from "./server-message.ts";

/** What the stream has shown so far. */
export interface SummaryView {
  /** The summary call `summary_started` was sent for. */
  readonly startedCallID: string | null;
  /** Compaction records shown (or present before the stream). */
  readonly shown: number;
}

/** The view of a stream that starts on `state`: earlier compactions are not shown again. */
export function toSummaryView(state: ConversationState): SummaryView {
  return { startedCallID: null, shown: state.compactions?.length ?? 0 };
}

export function toSummaryUpdates(
  view: SummaryView,
  state: ConversationState,
): { readonly view: SummaryView; readonly messages: AgentServerMessage[] } {
  const messages: AgentServerMessage[] = [];
  let { startedCallID, shown } = view;
  const records = state.compactions ?? [];
  for (const record of records.slice(shown)) {
    if (startedCallID !== record.callID) {
      messages.push(
        toUpdateMessage({ case: "summaryStarted", value: create(SummaryStartedUpdateSchema) }),
      );
    }
    messages.push(
      toUpdateMessage({
        case: "summary",
        value: create(SummaryUpdateSchema, { summary: record.summary }),
      }),
      toUpdateMessage({ case: "summaryCompleted", value: create(SummaryCompletedUpdateSchema) }),
    );
    startedCallID = record.callID;
  }
  shown = records.length;
  const call = state.call;
  if (
    state.status === "waiting_llm" &&
    call?.summary !== undefined &&
    call.callID !== startedCallID
  ) {
    messages.push(
      toUpdateMessage({ case: "summaryStarted", value: create(SummaryStartedUpdateSchema) }),
    );
    startedCallID = call.callID;
  }
  return { view: { startedCallID, shown }, messages };
}
