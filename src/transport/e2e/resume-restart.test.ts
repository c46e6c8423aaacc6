/**
 * A stream opened with a resume action (the client re-attaching to the conversation's running
 * turn on a new request id) survives a server restart like a stream that started its turn: the
 * runner binds it to the conversation and turn, with its resume request saved, when it takes the
 * turn over (store/request-streams.ts), so its RunSSE reconnect after a restart continues the turn
 * and a tool result appended through it completes it. The turn's original stream, superseded,
 * is refused at once (`stream_released`), whichever reconnects first.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import { createGate, type Harness, MODEL, readRunSse, startHarness } from "./test-harness.ts";

const CONVERSATION = "6e5d4c3b-3333-4a5b-8c6d-7e8f9a0b1c2d";

describe("a resume stream across a restart", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  for (const first of ["the resume stream", "the superseded first stream"] as const) {
    test(`its RunSSE reconnect continues the turn and a tool result appended through it completes the turn (${first} reconnects first)`, {
      timeout: 90_000,
    }, async () => {
      // RunSSE in Connect's own framing, so that a plain Connect client reads it (readRunSse).
      harness = await startHarness({ mode: "process", server: { runSseContentType: "connect" } });
      writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
      harness.reply(
        {
          text: "Reading.",
          toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "notes.txt" } }],
        },
        { text: "Your notes: water the plants." },
      );
      // The first two times the tool is asked for (on each server that then dies), the client
      // holds its answer; from the third on it runs the tool for real.
      const gates = [createGate(), createGate()];
      let asked = 0;
      const client = harness.client({
        onExec: async () => {
          const gate = gates[asked];
          asked += 1;
          if (gate !== undefined) await gate.promise;
          return undefined;
        },
      });

      // Turn one starts and waits on its tool; the server dies with it.
      const original = client.startTurn({
        conversationId: CONVERSATION,
        text: "What do my notes say?",
        modelId: MODEL,
      });
      await original.waitFor((m) => m.message.case === "execServerMessage");
      const originalLost = original.runSseLost();
      await harness.restart(); // SIGKILL
      await originalLost;
      // The client re-attaches to the conversation's running turn with a resume action on a new
      // stream (its first stream is given up: nothing more goes through it).
      const closing = original.close("the client moved to a resume stream");
      gates[0]?.open();
      await closing;
      const resumeRequest = client.runRequest({
        conversationId: CONVERSATION,
        text: "",
        modelId: MODEL,
        edit: (request) => {
          request.action = create(ConversationActionSchema, {
            action: { case: "resumeAction", value: {} },
          });
        },
      });
      const resumed = client.startTurn(resumeRequest, { timeoutMs: 30_000 });
      await resumed.waitFor((m) => m.message.case === "execServerMessage");

      // The server dies again while the resume stream carries the turn.
      const resumedLost = resumed.runSseLost();
      await harness.restart();
      await resumedLost;
      gates[1]?.open(); // the answer to the dead server's exec reaches the new one late

      // The superseded first stream is refused at once, whether before or after the resume
      // stream reconnects (without the resume stream's binding, it would carry the turn).
      const refused = async () => {
        const older = await readRunSse(harness, original.requestId);
        assert.deepEqual(older.kinds, []);
        assert.equal(older.error?.code, Code.NotFound);
        assert.match(older.error?.rawMessage ?? "", /cannot be picked up again/);
      };
      if (first === "the superseded first stream") await refused();
      resumed.reconnectRunSse();
      const result = await resumed.done;
      if (first === "the resume stream") await refused();
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

      // The bindings: both streams on the one turn; only the resume stream keeps a saved request.
      const started = await harness.store.findRequestStream(original.requestId);
      const resumedBinding = await harness.store.findRequestStream(resumed.requestId);
      assert.equal(resumedBinding?.conversationID, CONVERSATION);
      assert.equal(resumedBinding?.turnID, started?.turnID);
      assert.ok((resumedBinding?.clientState?.length ?? 0) > 0);
      assert.equal(started?.clientState, null);
    });
  }
});

describe("a resume request when nothing runs", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  test("the stream ends as a turn ends, without a checkpoint: none would name a turn the server has", {
    timeout: 30_000,
  }, async () => {
    harness = await startHarness({ mode: "in-process" });
    harness.reply({ text: "Hello." });
    const client = harness.client();
    const first = await client.startTurn({
      conversationId: CONVERSATION,
      text: "Hi",
      modelId: MODEL,
    }).done;
    assert.equal(first.error, undefined);
    const checkpoint = first.view.checkpoint;
    assert.ok(checkpoint !== undefined);
    const resumeRequest = client.runRequest({
      conversationId: CONVERSATION,
      text: "",
      modelId: MODEL,
      edit: (request) => {
        request.conversationState = checkpoint;
        request.action = create(ConversationActionSchema, {
          action: { case: "resumeAction", value: {} },
        });
      },
    });
    const resumed = await client.startTurn(resumeRequest).done;
    assert.equal(resumed.error, undefined);
    // A checkpoint here would add a turn under the resume request's id, unknown to the server,
    // and the client's next message would carry it as its last turn.
    assert.equal(resumed.view.checkpoints, 0);
    assert.ok(resumed.view.kinds.includes("turnEnded"));
  });
});
