/**
 * RunSSE through the real server with either responder (server option `runSseResponder`,
 * run-sse-response.ts): a turn and the stream cap end the same way on the client. The bytes of
 * both are compared in run-sse-response.test.ts.
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { Code } from "@connectrpc/connect";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "7a6b5c4d-3333-4a5b-8c6d-7e8f9a0b1c2d";

for (const responder of ["direct", "connect"] as const) {
  describe(`RunSSE with the ${responder} responder`, () => {
    let harness: Harness;
    afterEach(async () => harness.close());

    test("a turn streams its text and ends cleanly", async () => {
      harness = await startHarness({ server: { runSseResponder: responder } });
      harness.reply({ text: "Hello from the model." });
      const result = await harness
        .client()
        .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL }).done;
      assert.equal(result.error, undefined, result.error?.message);
      assert.equal(result.view.text, "Hello from the model.");
    });

    test("at the stream cap a new stream is refused with resource_exhausted", async () => {
      harness = await startHarness({ server: { runSseResponder: responder, maxStreams: 1 } });
      const first = harness.provider.requests.length;
      harness.provider.reply({
        type: "stall",
        body: toChatCompletionSse({ text: "a long answer" }),
        events: 1,
      });
      const client = harness.client();
      const holding = client.startTurn({
        conversationId: CONVERSATION,
        text: "hi",
        modelId: MODEL,
      });
      await harness.provider.request(first);
      const refused = await client.startTurn({
        conversationId: "7a6b5c4d-4444-4a5b-8c6d-7e8f9a0b1c2d",
        text: "hi",
        modelId: MODEL,
      }).done;
      assert.equal(refused.error?.code, Code.ResourceExhausted);
      await holding.cancel("done here");
      assert.equal((await holding.done).error?.code, Code.Canceled);
    });
  });
}
