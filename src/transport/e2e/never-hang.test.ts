/**
 * No client is left waiting: an action the server does not serve ends the stream with an error
 * the client shows, and an exec result that cannot be decoded fails that one tool call so the
 * turn goes on (issue "Reliability" §2).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { create, fromBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import { BidiAppendRequestSchema } from "../cursor/gen/aiserver/v1/bidi_pb.js";
import { BidiService } from "../cursor/index.ts";
import { createGate, type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "5d4c3b2a-1111-4a5b-8c6d-7e8f9a0b1c2d";

describe("no client is left waiting", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  // Summarize on a conversation without messages has its own answer (nothing to summarize); every
  // action the server does not serve gets the generic refusal (`invalid_argument`).
  for (const [name, action, code, message] of [
    [
      "summarize",
      create(ConversationActionSchema, { action: { case: "summarizeAction", value: {} } }),
      Code.InvalidArgument,
      /nothing to summarize/,
    ],
    [
      "cancel subagent",
      create(ConversationActionSchema, { action: { case: "cancelSubagentAction", value: {} } }),
      Code.InvalidArgument,
      /not supported by cursor-byok/,
    ],
    // Field 18 (goal continuation), which this schema does not model: not "no action".
    [
      "an unmodelled action",
      fromBinary(ConversationActionSchema, new Uint8Array([0x92, 0x01, 0x00]), {
        readUnknownFields: true,
      }),
      Code.InvalidArgument,
      /not supported by cursor-byok/,
    ],
  ] as const) {
    test(`a run request with ${name} ends at once with an error the client shows`, async () => {
      harness = await startHarness();
      const client = harness.client({ timeoutMs: 5_000 });
      const request = client.runRequest({
        conversationId: CONVERSATION,
        text: "x",
        modelId: MODEL,
      });
      request.action = action;
      const result = await client.startTurn(request).done;
      assert.equal(result.error?.code, code);
      assert.match(result.error?.message ?? "", message);
      if (name !== "summarize") {
        assert.ok(
          harness.logs.some((line) => line.level === "warn" && /not served/.test(line.message)),
        );
      }
      assert.equal(harness.provider.requests.length, 0, "no model call");
    });
  }

  test("an exec result that cannot be decoded fails that tool call and the turn goes on", async () => {
    harness = await startHarness();
    writeFileSync(join(harness.workspace, "a.txt"), "alpha\n");
    harness.reply(
      { toolCalls: [{ id: "call_ls", name: "list_dir", arguments: { path: "." } }] },
      { text: "The listing failed." },
    );
    const held = createGate();
    const client = harness.client({
      onExec: async () => {
        await held.promise; // the well-formed answer comes only after the broken one
        return undefined;
      },
    });
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "ls", modelId: MODEL });
    const exec = await turn.waitFor((m) => m.message.case === "execServerMessage");
    assert.ok(exec.message.case === "execServerMessage");
    // The result as a published client encodes it: LsSuccess field 1 as a path string.
    const lsSuccess = new BinaryWriter().tag(1, WireType.LengthDelimited).string("/w").finish();
    const lsResult = new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(lsSuccess).finish();
    const execResult = new BinaryWriter()
      .tag(1, WireType.Varint)
      .uint32(exec.message.value.id)
      .tag(8, WireType.LengthDelimited)
      .bytes(lsResult)
      .tag(15, WireType.LengthDelimited)
      .string(exec.message.value.execId)
      .finish();
    const bytes = new BinaryWriter().tag(2, WireType.LengthDelimited).bytes(execResult).finish();
    const bidi = createClient(
      BidiService,
      createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" }),
    );
    await bidi.bidiAppend(
      create(BidiAppendRequestSchema, {
        requestId: { requestId: turn.requestId },
        appendSeqno: BigInt(turn.reserveSeqno()),
        dataBinary: bytes,
      }),
    );
    // The append was applied: the call has failed, so the real answer now comes too late.
    held.open();
    const result = await turn.done;
    assert.equal(result.error, undefined);
    assert.equal(result.view.text, "The listing failed.");
    const loaded = await harness.store.load(CONVERSATION);
    const toolResult = loaded?.state.messages.find((m) => m.role === "toolResult");
    assert.ok(toolResult?.role === "toolResult" && toolResult.isError);
    assert.match(JSON.stringify(toolResult.content), /could not be decoded/);
    assert.ok(
      harness.logs.some(
        (line) => line.level === "warn" && /could not be decoded/.test(line.message),
      ),
    );
  });
});
