/**
 * A client that re-attaches to its conversation's running turn on a NEW stream with a resume
 * action while the turn's first stream is still in this process (the IDE after a window reload:
 * its RunSSE dropped, the first stream only waits out its reconnect grace). Nobody reads the first
 * stream, so the resume stream takes the turn over (loop/turn-ownership.ts `mayResume`): the tool
 * call in flight is asked again on it (a read, sent again: store/README.md, outcome unknown), the
 * answer completes the turn there, and the first stream's grace running out cancels nothing.
 * While the first stream still has a reader, the resume is refused as before.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import type { RecordedRequest } from "../../llm/testing/fake-provider.ts";
import { toSubagentConversationID } from "../../loop/index.ts";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import { DEFAULT_SERVER_OPTIONS } from "../server.ts";
import type { CursorClient } from "../testing/cursor-client.ts";
import { createGate, type Harness, MODEL, readRunSse, startHarness } from "./test-harness.ts";

const CONVERSATION = "7f6e5d4c-4444-4b5c-8d7e-8f9a0b1c2d3e";
const GRACE_MS = 300;

const resumeRequest = (client: CursorClient) =>
  client.runRequest({
    conversationId: CONVERSATION,
    text: "",
    modelId: MODEL,
    edit: (request) => {
      request.action = create(ConversationActionSchema, {
        action: { case: "resumeAction", value: {} },
      });
    },
  });

describe("a resume stream while the turn's first stream is still in memory", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  const start = async () => {
    harness = await startHarness({
      server: {
        runSseContentType: "connect",
        stream: { ...DEFAULT_SERVER_OPTIONS.stream, reconnectGraceMs: GRACE_MS },
      },
    });
    writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
    harness.reply(
      {
        text: "Reading.",
        toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "notes.txt" } }],
      },
      { text: "Your notes: water the plants." },
    );
  };

  test("takes the turn over from a stream nobody reads: the tool call is asked again there and its answer completes the turn; the first stream's grace cancels nothing", {
    timeout: 60_000,
  }, async () => {
    await start();
    // The first exec (on the first stream) is held until the client gave that stream up; the
    // second (on the resume stream) until the first stream's grace has run out. Both then run.
    const first = createGate();
    const afterGrace = createGate();
    const gates = [first, afterGrace];
    let asked = 0;
    const client = harness.client({
      onExec: async () => {
        const gate = gates[asked];
        asked += 1;
        if (gate !== undefined) await gate.promise;
        return undefined;
      },
    });
    const original = client.startTurn({
      conversationId: CONVERSATION,
      text: "What do my notes say?",
      modelId: MODEL,
    });
    await original.waitFor((m) => m.message.case === "execServerMessage");
    // The RunSSE drops (a window reload) and does not come back: the stream waits out its grace.
    await original.dropRunSse();
    await harness.untilLog("nobody reads the stream; waiting for a reconnect");

    const resumed = client.startTurn(resumeRequest(client), { timeoutMs: 30_000 });
    // Refused, the resume stream would be told the turn ended and end.
    const reasked = await Promise.race([
      resumed.waitFor((m) => m.message.case === "execServerMessage").then(() => true),
      resumed
        .waitFor((m) => m.message.case === "interactionUpdate" && isTurnEnded(m.message.value))
        .then(() => false),
    ]);
    if (!reasked) first.open(); // lets the client close its first stream
    assert.ok(reasked, "the tool call is asked again on the resume stream");
    assert.ok(
      harness.logs.some((l) => l.message === "another stream took the turn over; this stream ends"),
    );
    // The client gave its first stream up (its exec's answer there, if any, is refused).
    first.open();
    await original.close("the client moved to a resume stream").catch(() => {});

    // Longer than the first stream's grace: it would have canceled the turn by now.
    await delay(GRACE_MS * 3);
    assert.equal((await harness.store.load(CONVERSATION))?.state.status, "waiting_client");
    assert.ok(!harness.logs.some((l) => l.message === "client gone; canceling the turn"));
    afterGrace.open();

    const result = await resumed.done;
    assert.equal(result.error, undefined);
    assert.match(result.view.text, /Your notes: water the plants\.$/);
    assert.ok(
      resumed.sent.some((sent) => sent.kind.startsWith("exec:read")),
      "the tool result went up through the resume stream",
    );
    const loaded = await harness.store.load(CONVERSATION);
    assert.equal(loaded?.state.status, "final");
    assert.deepEqual(
      loaded?.state.messages.map((m) => m.role),
      ["user", "assistant", "toolResult", "assistant"],
    );
    const toolResult = loaded?.state.messages[2];
    assert.ok(toolResult?.role === "toolResult" && !toolResult.isError);
    assert.equal(harness.provider.requests.length, 2);

    // The resume stream is bound to the turn; the first stream's saved request is released, and a
    // late reconnect to it is not told the turn ended.
    const started = await harness.store.findRequestStream(original.requestId);
    const bound = await harness.store.findRequestStream(resumed.requestId);
    assert.equal(bound?.turnID, started?.turnID);
    assert.equal(started?.clientState, null);
    const late = await readRunSse(harness, original.requestId);
    assert.ok(!late.kinds.includes("interactionUpdate"), late.kinds.join());
    assert.ok(
      late.error?.code === Code.Aborted || late.error?.code === Code.NotFound,
      String(late.error),
    );
  });

  test("is refused while the first stream still has a reader: the resume stream is told the turn ended, the turn goes on on the first stream", {
    timeout: 60_000,
  }, async () => {
    await start();
    const gate = createGate();
    let asked = 0;
    const client = harness.client({
      onExec: async () => {
        asked += 1;
        await gate.promise;
        return undefined;
      },
    });
    const original = client.startTurn({
      conversationId: CONVERSATION,
      text: "What do my notes say?",
      modelId: MODEL,
    });
    await original.waitFor((m) => m.message.case === "execServerMessage");

    const resumed = await client.startTurn(resumeRequest(client), { timeoutMs: 30_000 }).done;
    assert.ok(!resumed.messages.some((m) => m.message.case === "execServerMessage"));
    assert.ok(!harness.logs.some((l) => l.message.startsWith("another stream took the turn")));

    gate.open();
    const result = await original.done;
    assert.equal(result.error, undefined);
    assert.match(result.view.text, /Your notes: water the plants\.$/);
    assert.equal(asked, 1, "asked once, on the first stream");
    assert.equal((await harness.store.load(CONVERSATION))?.state.status, "final");
  });
});

function isTurnEnded(update: { message: { case?: string } }): boolean {
  return update.message.case === "turnEnded";
}

describe("a resume stream takes over a turn whose subagent runs", () => {
  test("the child follows the parent to the new stream: its read is asked again there and the parent ends with its answer", {
    timeout: 60_000,
  }, async () => {
    const harness = await startHarness({
      server: {
        runSseContentType: "connect",
        stream: { ...DEFAULT_SERVER_OPTIONS.stream, reconnectGraceMs: 10_000 },
      },
    });
    const first = createGate();
    try {
      writeFileSync(join(harness.workspace, "a.ts"), "export const a = 1;\n");
      harness.provider.answer(answerWithSubagent);
      let reads = 0;
      const held = createGate();
      const client = harness.client({
        onExec: async (exec) => {
          if (exec.message.case !== "readArgs") return undefined;
          reads += 1;
          if (reads === 1) {
            held.open();
            await first.promise; // the first stream's read is never answered there
          }
          return undefined;
        },
      });
      const original = client.startTurn({
        conversationId: SUBAGENT_CONVERSATION,
        text: "go",
        modelId: MODEL,
      });
      await held.promise;
      await original.dropRunSse();
      await harness.untilLog("nobody reads the stream; waiting for a reconnect");

      const resumed = client.startTurn(
        client.runRequest({
          conversationId: SUBAGENT_CONVERSATION,
          text: "",
          modelId: MODEL,
          edit: (request) => {
            request.action = create(ConversationActionSchema, {
              action: { case: "resumeAction", value: {} },
            });
          },
        }),
        { timeoutMs: 30_000 },
      );
      const result = await resumed.done;
      assert.equal(result.error, undefined, result.error?.message);
      assert.match(result.view.text, /The subagent read it\.$/);
      assert.equal(reads, 2, "the child's read was asked again on the resume stream");
      const parent = await harness.store.load(SUBAGENT_CONVERSATION);
      assert.equal(parent?.state.status, "final");
      const taskResult = parent?.state.messages.find((message) => message.role === "toolResult");
      assert.ok(
        taskResult?.role === "toolResult" && !taskResult.isError,
        JSON.stringify(taskResult),
      );
      const child = await harness.store.load(
        toSubagentConversationID(SUBAGENT_CONVERSATION, `${SUBAGENT_CONVERSATION}:t1:c0:call_task`),
      );
      assert.equal(child?.state.status, "final");
      assert.equal(child?.state.turnCount, 1, "the same child continued, not started again");
      assert.deepEqual(
        harness.logs.filter((line) => line.level === "error").map((line) => line.fields),
        [],
      );
      first.open();
      await original.close("the client moved to a resume stream").catch(() => {});
    } finally {
      first.open();
      await harness.close();
    }
  });
});

const SUBAGENT_CONVERSATION = "subagent-takeover";

/** The model's next step from the request alone: the parent runs a subagent that reads a file. */
function answerWithSubagent(request: RecordedRequest) {
  const body = JSON.parse(request.body) as { messages: { role: string; content?: unknown }[] };
  const results = body.messages.filter((message) => message.role === "tool").length;
  const isChild = String(body.messages[0]?.content ?? "").includes("# You are a subagent");
  const reply = isChild
    ? results === 0
      ? { toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "a.ts" } }] }
      : { text: "a.ts exports a = 1." }
    : results === 0
      ? {
          toolCalls: [
            {
              id: "call_task",
              name: "task",
              arguments: { description: "Read", prompt: "Read a.ts", subagent_type: "general" },
            },
          ],
        }
      : { text: "The subagent read it." };
  return { type: "sse", body: toChatCompletionSse(reply) } as const;
}
