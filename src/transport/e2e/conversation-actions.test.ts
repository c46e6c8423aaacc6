/**
 * Conversation actions beyond a user message, through the real server: `/summarize` (answered
 * with a clear "not supported yet" while compaction is not built).
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import { ErrorDetailsSchema } from "../cursor/gen/aiserver/v1/error_details_pb.js";
import { type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "3c2b1a0f-5555-4a5b-8c6d-7e8f9a0b1c2d";

describe("conversation actions end to end", () => {
  let harness: Harness;
  afterEach(async () => {
    await harness.close();
  });

  test("summarize ends at once with an error saying it is not supported yet", async () => {
    harness = await startHarness();
    const client = harness.client();
    const request = client.runRequest({ conversationId: CONVERSATION, text: "", modelId: MODEL });
    request.action = create(ConversationActionSchema, {
      action: { case: "summarizeAction", value: {} },
    });
    const result = await client.startTurn(request).done;
    assert.equal(result.error?.code, Code.Unimplemented);
    const [details] = result.error?.findDetails(ErrorDetailsSchema) ?? [];
    assert.equal(details?.details?.title, "Not supported by cursor-byok yet");
    assert.match(
      details?.details?.detail ?? "",
      /Summarizing a conversation \(compaction\) is not supported yet/,
    );
    assert.equal(details?.details?.isRetryable, false);
    assert.equal(harness.provider.requests.length, 0);
  });
});
