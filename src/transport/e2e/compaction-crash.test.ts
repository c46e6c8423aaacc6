/**
 * kill -9 during a summary call (docs/compaction.md): the real server in a process of its own is
 * killed with SIGKILL while the provider holds the summary request; restarted on the same
 * database, with the client reconnecting, the summary call is repeated with its saved request and
 * the compaction completes. The stored history is complete and holds exactly one compaction.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import type { FakeReply, RecordedRequest } from "../../llm/testing/fake-provider.ts";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import { createGate, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "compaction-crash";
const SUMMARY = "Goals: answer four questions. Decisions: none. To-dos: none.";

describe("compaction and crashes", () => {
  test("killed with SIGKILL during the summary call: resumed, completed, history complete", {
    timeout: 60_000,
  }, async () => {
    const harness = await startHarness({ mode: "process" });
    try {
      const summaryReached = createGate();
      const summaryBodies: string[] = [];
      harness.provider.answer((request: RecordedRequest): FakeReply => {
        if (request.body.includes("You summarise a conversation")) {
          summaryBodies.push(request.body);
          if (summaryBodies.length === 1) {
            summaryReached.open();
            return { type: "hang" };
          }
          return { type: "sse", body: toChatCompletionSse({ text: SUMMARY }) };
        }
        return { type: "sse", body: toChatCompletionSse({ text: "an answer" }) };
      });
      const client = harness.client({ timeoutMs: 30_000 });
      for (const text of ["first", "second", "third", "fourth"]) {
        const turn = await client.startTurn({ conversationId: CONVERSATION, text, modelId: MODEL })
          .done;
        assert.equal(turn.error, undefined);
      }
      const request = client.runRequest({ conversationId: CONVERSATION, text: "", modelId: MODEL });
      request.action = create(ConversationActionSchema, {
        action: { case: "summarizeAction", value: {} },
      });
      const turn = client.startTurn(request);
      const lost = turn.runSseLost();
      await summaryReached.promise;
      await harness.restart(); // SIGKILL while the summary request is in flight
      await lost;
      turn.reconnectRunSse();
      const result = await turn.done;
      assert.equal(result.error, undefined, result.error?.message);
      assert.equal(summaryBodies.length, 2, "the summary call was repeated once");
      assert.equal(summaryBodies[1], summaryBodies[0], "with its saved request, byte for byte");
      const updates = result.messages.flatMap((m) =>
        m.message.case === "interactionUpdate" ? [m.message.value.message.case] : [],
      );
      assert.ok(
        updates.includes("summary") && updates.includes("summaryCompleted"),
        updates.join(),
      );

      const loaded = await harness.store.load(CONVERSATION);
      assert.equal(loaded?.state.messages.length, 8, "every message is still stored");
      assert.equal(loaded?.state.compactions?.length, 1);
      assert.equal(loaded?.state.compactions?.[0]?.summary, SUMMARY);
      assert.equal(loaded?.state.status, "final");
    } finally {
      await harness.close();
    }
  });
});
