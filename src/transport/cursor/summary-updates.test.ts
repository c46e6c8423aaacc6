/**
 * The summary interaction updates (summary-updates.ts): their bytes (golden, field numbers 9–11 of
 * InteractionUpdate) and when they are sent over a compaction's states.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { toBinary } from "@bufbuild/protobuf";
import { type ConversationState, createConversation } from "../../loop/index.ts";
import {
  type AgentServerMessage,
  AgentServerMessageSchema,
} from "./gen/agent/v1/agent_stream_pb.js";
import { toSummaryUpdates, toSummaryView } from "./summary-updates.ts";
import { assertGolden } from "./testing.ts";

/** Connect envelopes of `messages`, as the stream writes them. */
function toEnvelopes(messages: readonly AgentServerMessage[]): Uint8Array {
  const parts = messages.map((message) => {
    const payload = toBinary(AgentServerMessageSchema, message);
    const header = Buffer.alloc(5);
    header.writeUInt32BE(payload.length, 1);
    return Buffer.concat([header, payload]);
  });
  return new Uint8Array(Buffer.concat(parts));
}

const base = createConversation("conv-s").committed;
const summaryCall: ConversationState = {
  ...base,
  status: "waiting_llm",
  call: { callID: "conv-s:t3:c0", step: 0, summary: { upTo: 4, trigger: "request" } },
};
const compacted: ConversationState = {
  ...summaryCall,
  status: "final",
  compactions: [
    {
      callID: "conv-s:t3:c0",
      upTo: 4,
      trigger: "request",
      summary: "Goals: fix the parser. Files: src/parse.ts (changed).",
      at: 1,
      historyLength: 6,
    },
  ],
};

test("a compaction shows summary_started, summary, summary_completed (golden bytes)", () => {
  const first = toSummaryUpdates(toSummaryView(base), summaryCall);
  const second = toSummaryUpdates(first.view, compacted);
  assert.deepEqual(
    [...first.messages, ...second.messages].map((m) =>
      m.message.case === "interactionUpdate" ? m.message.value.message.case : m.message.case,
    ),
    ["summaryStarted", "summary", "summaryCompleted"],
  );
  assertGolden("out-update-summary", toEnvelopes([...first.messages, ...second.messages]));
  // nothing is shown twice
  assert.deepEqual(toSummaryUpdates(second.view, compacted).messages, []);
  assert.deepEqual(toSummaryUpdates(first.view, summaryCall).messages, []);
});

test("a stream that starts after a compaction does not show it; a failed summary call shows only its start", () => {
  assert.deepEqual(toSummaryUpdates(toSummaryView(compacted), compacted).messages, []);
  const started = toSummaryUpdates(toSummaryView(base), summaryCall);
  const failed = toSummaryUpdates(started.view, { ...summaryCall, status: "failed" });
  assert.deepEqual(failed.messages, []);
});
