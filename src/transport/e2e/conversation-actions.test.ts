/**
 * Conversation actions and mode changes beyond a plain user message, through the real server:
 * `/summarize` (a compaction turn: summary interaction updates, and later requests carry the
 * summary instead of the early messages; a clear error when there is nothing to summarize) and a
 * switch from ask to agent mode that the rest of the turn follows.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import { createGate, type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "3c2b1a0f-5555-4a5b-8c6d-7e8f9a0b1c2d";

describe("conversation actions end to end", () => {
  let harness: Harness;
  afterEach(async () => {
    await harness.close();
  });

  test("summarize on a conversation without messages ends at once with a clear error", async () => {
    harness = await startHarness();
    const client = harness.client();
    const request = client.runRequest({ conversationId: CONVERSATION, text: "", modelId: MODEL });
    request.action = create(ConversationActionSchema, {
      action: { case: "summarizeAction", value: {} },
    });
    const result = await client.startTurn(request).done;
    assert.equal(result.error?.code, Code.InvalidArgument);
    assert.match(
      result.error?.message ?? "",
      /nothing to summarize: this conversation has no messages yet/,
    );
    assert.equal(harness.provider.requests.length, 0);
  });

  test("summarize compacts: the client sees the summary, the next request carries it", async () => {
    harness = await startHarness();
    const client = harness.client();
    for (const [i, text] of [
      "first question",
      "second question",
      "third question",
      "fourth question",
    ].entries()) {
      harness.reply({ text: `answer ${i}` });
      const turn = await client.startTurn({ conversationId: CONVERSATION, text, modelId: MODEL })
        .done;
      assert.equal(turn.error, undefined);
    }
    harness.reply({ text: "Goals: answer four questions. Decisions: none. To-dos: none." });
    const request = client.runRequest({ conversationId: CONVERSATION, text: "", modelId: MODEL });
    request.action = create(ConversationActionSchema, {
      action: { case: "summarizeAction", value: {} },
    });
    const result = await client.startTurn(request).done;
    assert.equal(result.error, undefined);
    const updates = result.messages.flatMap((m) =>
      m.message.case === "interactionUpdate" ? [m.message.value.message] : [],
    );
    const cases = updates.map((u) => u.case);
    const started = cases.indexOf("summaryStarted");
    assert.ok(started >= 0, `no summary_started in ${cases.join(",")}`);
    assert.deepEqual(cases.slice(started, started + 3), [
      "summaryStarted",
      "summary",
      "summaryCompleted",
    ]);
    const summary = updates.find((u) => u.case === "summary");
    assert.match(summary?.case === "summary" ? summary.value.summary : "", /Goals: answer four/);
    // the summary call: a transcript of the compacted messages, no tools
    const summaryBody = JSON.parse(harness.provider.requests[4]?.body ?? "{}") as {
      messages: { role: string; content: string }[];
      tools?: unknown[];
    };
    assert.match(JSON.stringify(summaryBody.messages), /first question/);
    assert.equal(summaryBody.tools, undefined);

    harness.reply({ text: "answer 4" });
    const next = await client.startTurn({
      conversationId: CONVERSATION,
      text: "fifth question",
      modelId: MODEL,
    }).done;
    assert.equal(next.error, undefined);
    const body = harness.provider.requests[5]?.body ?? "";
    assert.match(body, /summarised to fit the model's context window/);
    assert.match(body, /Goals: answer four questions/);
    assert.doesNotMatch(body, /first question/, "the compacted messages are not sent");
    assert.match(body, /fourth question/, "the verbatim tail is sent");
    assert.match(body, /fifth question/);
    const stored = await harness.store.load(CONVERSATION);
    assert.equal(stored?.state.messages.length, 10, "the stored history stays complete");
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
