/**
 * Conversation actions and mode changes beyond a plain user message, through the real server:
 * `/summarize` (answered with a clear "not supported yet" while compaction is not built) and a
 * switch from ask to agent mode that the rest of the turn follows.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import { ErrorDetailsSchema } from "../cursor/gen/aiserver/v1/error_details_pb.js";
import { createGate, type Harness, MODEL, startHarness } from "./test-harness.ts";

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

  test("switch_mode: after the user approves, the rest of the turn runs in agent mode", async () => {
    harness = await startHarness();
    harness.reply(
      {
        toolCalls: [
          {
            id: "call_switch",
            name: "switch_mode",
            arguments: { target_mode: "agent", explanation: "Writing the file needs agent mode." },
          },
        ],
      },
      {
        toolCalls: [
          {
            id: "call_write",
            name: "write_file",
            arguments: { path: "hello.txt", content: "hi\n" },
          },
        ],
      },
      { text: "Written." },
    );
    const result = await harness.client().startTurn({
      conversationId: CONVERSATION,
      text: "Create hello.txt",
      modelId: MODEL,
      mode: "ask",
    }).done;
    assert.equal(result.error, undefined);
    assert.equal(readFileSync(join(harness.workspace, "hello.txt"), "utf8"), "hi\n");
    const bodies = harness.provider.requests.map(
      (request) =>
        JSON.parse(request.body) as {
          messages: { role: string; content: unknown }[];
          tools?: { function: { name: string } }[];
        },
    );
    const tools = (index: number) => (bodies[index]?.tools ?? []).map((tool) => tool.function.name);
    assert.ok(!tools(0).includes("write_file"), "ask mode offers no write_file");
    assert.ok(tools(1).includes("write_file"), "agent mode does");
    const system = (index: number) => JSON.stringify(bodies[index]?.messages[0]?.content);
    assert.match(system(0), /# Mode: ask/);
    assert.match(system(1), /# Mode: agent/);
    // History still extends: the second request starts with the first one's messages.
    const rest = (index: number) =>
      (bodies[index]?.messages ?? []).slice(1).map((m) => JSON.stringify(m));
    assert.deepEqual(rest(1).slice(0, rest(0).length), rest(0));
  });

  test("shell_command: what the user ran becomes context for the next model call, once", async () => {
    harness = await startHarness();
    harness.reply({ text: "I see you ran the tests." }, { text: "Nothing new." });
    const client = harness.client();
    const action = client.runRequest({ conversationId: CONVERSATION, text: "", modelId: MODEL });
    action.action = create(ConversationActionSchema, {
      action: {
        case: "shellCommandAction",
        value: { shellCommand: { command: "npm test -- --grep login" }, execId: "user-exec-1" },
      },
    });
    const recorded = await client.startTurn(action).done;
    assert.equal(recorded.error, undefined);
    assert.equal(harness.provider.requests.length, 0, "no model call for the command itself");
    for (const text of ["What did I just run?", "And now?"]) {
      const turn = await client.startTurn({ conversationId: CONVERSATION, text, modelId: MODEL })
        .done;
      assert.equal(turn.error, undefined);
    }
    const [first, second] = harness.provider.requests.map((request) => request.body);
    assert.match(first ?? "", /ran this command in their terminal[^"]*\\nnpm test -- --grep login/);
    assert.equal((second ?? "").split("npm test -- --grep login").length - 1, 1, "not repeated");
  });

  test("switch_mode survives a restart mid-turn: the resumed turn keeps the new mode", async () => {
    harness = await startHarness({ mode: "process" });
    harness.reply(
      {
        toolCalls: [
          { id: "call_switch", name: "switch_mode", arguments: { target_mode: "agent" } },
        ],
      },
      {
        toolCalls: [
          {
            id: "call_write",
            name: "write_file",
            arguments: { path: "after.txt", content: "ok\n" },
          },
        ],
      },
      { text: "Written after the restart." },
    );
    const gate = createGate();
    let held = true;
    const client = harness.client({
      onExec: async (exec) => {
        if (held && exec.message.case === "writeArgs") await gate.promise;
        return undefined;
      },
    });
    const turn = client.startTurn({
      conversationId: CONVERSATION,
      text: "Write after.txt",
      modelId: MODEL,
      mode: "ask",
    });
    await turn.waitFor(
      (m) => m.message.case === "execServerMessage" && m.message.value.message.case === "writeArgs",
    );
    const lost = turn.runSseLost();
    await harness.restart(); // SIGKILL while the write waits in the client
    await lost;
    held = false;
    gate.open();
    turn.reconnectRunSse();
    const result = await turn.done;
    assert.equal(result.error, undefined);
    assert.equal(readFileSync(join(harness.workspace, "after.txt"), "utf8"), "ok\n");
    const loaded = await harness.store.load(CONVERSATION);
    const written = loaded?.state.messages.find(
      (m) => m.role === "toolResult" && m.toolCallId === "call_write",
    );
    assert.ok(written?.role === "toolResult" && !written.isError, JSON.stringify(written));
  });
});
