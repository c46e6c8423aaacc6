/**
 * A turn carried on to its end by another stream than the one that started it (a resume request
 * after a restart; a resume that takes the turn over from a stream nobody reads, the IDE after a
 * window reload) names the turn in that stream's checkpoints by the request id that started it
 * (loop/turn-record.ts), not by the resume request's id. So the IDE's checkpoint ends with a turn
 * the server knows, and a later edit that goes back to exactly that turn is a rewind
 * (docs/protocol.md "Rewinds"): the model then sees the turns up to it and the edited message,
 * not the turn the user edited away.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import type { ConversationStateStructure } from "../cursor/gen/agent/v1/conversation_state_pb.js";
import { toLastTurnOrigin } from "../cursor/index.ts";
import { DEFAULT_SERVER_OPTIONS } from "../server.ts";
import { type CursorClient, toReferencedBlobs } from "../testing/index.ts";
import { runTurn, textsOf, turn } from "./provider-turns.ts";
import { createGate, type Harness, MODEL, readRunSse, startHarness } from "./test-harness.ts";

const GRACE_MS = 300;

const resumeRequest = (client: CursorClient, conversationId: string) =>
  client.runRequest({
    conversationId,
    text: "",
    modelId: MODEL,
    edit: (request) => {
      request.action = create(ConversationActionSchema, {
        action: { case: "resumeAction", value: {} },
      });
    },
  });

/**
 * After turn B (started by `started`, finished on a resume stream): the client's checkpoint ends
 * with B under B's own request id; turn C follows; C edited (its message id, the checkpoint from
 * before C) rewinds to the end of B.
 */
async function editAfterResumedTurn(
  harness: Harness,
  client: CursorClient,
  id: string,
  started: string,
): Promise<void> {
  const beforeC = client.checkpoint(id);
  assert.equal(
    // Blob-backed: the turn is looked up in the blobs the client sends with it.
    toLastTurnOrigin(
      beforeC,
      beforeC === undefined ? [] : toReferencedBlobs(beforeC, client.blobs),
    ),
    started,
    "the checkpoint names the resumed turn by the request id that started it",
  );
  await runTurn(harness, client, turn(id, "C", "mC"), "answer C");
  const edited = await runTurn(
    harness,
    client,
    { ...turn(id, "C2", "mC"), checkpoint: beforeC ?? null },
    "answer C2",
  );
  assert.deepEqual(
    textsOf(edited, "user"),
    ["A", "B", "C2"],
    "the edit of C is a rewind to B's end",
  );
}

describe("a turn finished on a resume stream, then an edit of the next message", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  test("after a restart (SIGKILL): the resume stream's checkpoints name the turn by its own request id, and the edit is a rewind", {
    timeout: 90_000,
  }, async () => {
    harness = await startHarness({ mode: "process", server: { runSseContentType: "connect" } });
    writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
    const id = "resume-checkpoint-restart";
    // The first time the tool is asked for (on the server that then dies) the client holds it.
    const gate = createGate();
    let asked = 0;
    const client = harness.client({
      onExec: async () => {
        asked += 1;
        if (asked === 1) await gate.promise;
        return undefined;
      },
    });
    await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
    harness.reply(
      {
        text: "Reading.",
        toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "notes.txt" } }],
      },
      { text: "Your notes: water the plants." },
    );
    const original = client.startTurn(turn(id, "B", "mB"));
    await original.waitFor((m) => m.message.case === "execServerMessage");
    const lost = original.runSseLost();
    await harness.restart(); // SIGKILL
    await lost;
    const closing = original.close("the client moved to a resume stream");
    gate.open();
    await closing;

    const resumed = client.startTurn(resumeRequest(client, id), { timeoutMs: 30_000 });
    const result = await resumed.done;
    assert.equal(result.error, undefined);
    assert.match(result.view.text, /Your notes: water the plants\.$/);
    assert.ok(result.view.checkpoints > 0, "the resume stream sent checkpoints");

    // Another restart: the resume stream's late reconnect (its saved request restored, the turn
    // over) ends with a checkpoint that names the turn by its own request id too.
    await harness.restart();
    const late = await readRunSse(harness, resumed.requestId);
    assert.equal(late.error, undefined);
    const checkpoint = late.messages.find((m) => m.message.case === "conversationCheckpointUpdate")
      ?.message.value as ConversationStateStructure | undefined;
    assert.equal(toLastTurnOrigin(checkpoint, []), original.requestId);

    await editAfterResumedTurn(harness, client, id, original.requestId);
  });

  test("after a reconnect (takeover of a stream nobody reads): the same", {
    timeout: 60_000,
  }, async () => {
    harness = await startHarness({
      server: {
        runSseContentType: "connect",
        stream: { ...DEFAULT_SERVER_OPTIONS.stream, reconnectGraceMs: GRACE_MS },
      },
    });
    writeFileSync(join(harness.workspace, "notes.txt"), "water the plants\n");
    const id = "resume-checkpoint-takeover";
    const gate = createGate();
    let asked = 0;
    const client = harness.client({
      onExec: async () => {
        asked += 1;
        if (asked === 1) await gate.promise;
        return undefined;
      },
    });
    try {
      await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
      harness.reply(
        {
          text: "Reading.",
          toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "notes.txt" } }],
        },
        { text: "Your notes: water the plants." },
      );
      const original = client.startTurn(turn(id, "B", "mB"));
      await original.waitFor((m) => m.message.case === "execServerMessage");
      // The RunSSE drops (a window reload) and does not come back; a resume takes the turn over.
      await original.dropRunSse();
      await harness.untilLog("nobody reads the stream; waiting for a reconnect");
      const resumed = client.startTurn(resumeRequest(client, id), { timeoutMs: 30_000 });
      await resumed.waitFor((m) => m.message.case === "execServerMessage");
      gate.open();
      await original.close("the client moved to a resume stream").catch(() => {});
      const result = await resumed.done;
      assert.equal(result.error, undefined);
      assert.match(result.view.text, /Your notes: water the plants\.$/);

      await editAfterResumedTurn(harness, client, id, original.requestId);
      const applied = harness.logs.find((line) => line.message === "rewind applied");
      assert.deepEqual([applied?.fields.fromTurn, applied?.fields.toTurn], [3, 2]);
    } finally {
      gate.open();
    }
  });
});
