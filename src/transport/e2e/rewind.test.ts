/**
 * Rewinds end to end (docs/protocol.md "Rewinds", loop/rewind.ts): the user edits an earlier
 * message in the IDE and sends it again. The IDE sends the same conversation id, the message's
 * same id and the checkpoint it had when that message was first sent; the model must then see the
 * conversation as the user does — the turns before the edited message and the edited message —,
 * and the following turns continue that branch, also after a restart. A client that sends no
 * checkpoint is never rewound.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ConversationActionSchema } from "../cursor/gen/agent/v1/conversation_action_pb.js";
import { ConversationStateStructureSchema } from "../cursor/gen/agent/v1/conversation_state_pb.js";
import type { CursorClient } from "../testing/index.ts";
import { messagesBytes, messagesOf, runTurn, textsOf, turn } from "./provider-turns.ts";
import { createGate, type Harness, MODEL, startHarness } from "./test-harness.ts";

describe("an edited earlier message sent again (in-process)", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness();
  });
  after(() => harness.close());

  test("the model sees the turns before it and the edited message, not the turns edited away", async () => {
    const id = "rewind-0001";
    const client = harness.client();
    await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
    const beforeB = client.checkpoint(id);
    await runTurn(harness, client, turn(id, "B", "mB"), "answer B");
    const third = await runTurn(harness, client, turn(id, "C", "mC"), "answer C");
    assert.deepEqual(textsOf(third, "user"), ["A", "B", "C"]);

    // The IDE: the edited bubble keeps its id and carries the checkpoint saved when it was sent.
    const edited = await runTurn(
      harness,
      client,
      { ...turn(id, "B2", "mB"), checkpoint: beforeB ?? null },
      "answer B2",
    );
    assert.deepEqual(textsOf(edited, "user"), ["A", "B2"]);
    assert.deepEqual(textsOf(edited, "assistant"), ["answer A"]);
    const applied = harness.logs.find((line) => line.message === "rewind applied");
    assert.deepEqual(
      {
        from: applied?.fields.from,
        fromTurn: applied?.fields.fromTurn,
        toTurn: applied?.fields.toTurn,
        dropped: applied?.fields.droppedMessages,
      },
      { from: id, fromTurn: 3, toTurn: 1, dropped: 4 },
    );

    // The next turn continues the branch: its request extends the edited turn's byte for byte.
    const next = await runTurn(harness, client, turn(id, "D", "mD"), "answer D");
    assert.deepEqual(textsOf(next, "user"), ["A", "B2", "D"]);
    assert.deepEqual(textsOf(next, "assistant"), ["answer A", "answer B2"]);
    assert.ok(messagesBytes(next).startsWith(messagesBytes(edited)), "a prefix extension");

    // The source conversation keeps its history: a branch is a conversation of its own.
    const source = await harness.store.load(id);
    assert.equal(source?.state.turnCount, 3);
    assert.equal(source?.state.messages.length, 6);
  });

  test("a client that sends back no blobs (no pre_fetched_blobs): the rewind is still detected", async () => {
    const id = "rewind-0005";
    const client = harness.client();
    // Every run request of this client without pre_fetched_blobs: the last turn of its
    // checkpoint is only a blob id, read from the turn blobs this process wrote.
    const bare = async (init: Parameters<CursorClient["runRequest"]>[0], answer: string) => {
      harness.reply({ text: answer });
      const before = harness.provider.requests.length;
      const request = client.runRequest(init);
      assert.ok(
        request.conversationState === undefined ||
          request.conversationState.turns.every((entry) => entry.length === 32),
      );
      const result = await client.startTurn({ ...request, preFetchedBlobs: [] }).done;
      assert.equal(result.error, undefined);
      return harness.provider.requests[before]?.body ?? "";
    };
    await bare(turn(id, "A", "mA"), "answer A");
    const beforeB = client.checkpoint(id);
    await bare(turn(id, "B", "mB"), "answer B");
    await bare(turn(id, "C", "mC"), "answer C");
    const edited = await bare(
      { ...turn(id, "B2", "mB"), checkpoint: beforeB ?? null },
      "answer B2",
    );
    assert.deepEqual(textsOf(edited, "user"), ["A", "B2"]);
    const applied = harness.logs.find(
      (line) => line.message === "rewind applied" && line.fields.from === id,
    );
    assert.deepEqual(
      { fromTurn: applied?.fields.fromTurn, toTurn: applied?.fields.toTurn },
      { fromTurn: 3, toTurn: 1 },
    );
    assert.equal(
      harness.logs.filter((line) => line.message.startsWith("the checkpoint's last turn is a blob"))
        .length,
      0,
    );
  });

  test("a blob-form last turn known neither way: no rewind, said once at info", async () => {
    const id = "rewind-0006";
    const client = harness.client();
    const stranger = create(ConversationStateStructureSchema, {
      turns: [new Uint8Array(32).fill(0xab)],
    });
    harness.reply({ text: "answer A" });
    const result = await client.startTurn({ ...turn(id, "A", "mA"), checkpoint: stranger }).done;
    assert.equal(result.error, undefined);
    const said = harness.logs.filter(
      (line) =>
        line.message.startsWith("the checkpoint's last turn is a blob") &&
        line.fields.conversation === id,
    );
    assert.deepEqual(
      said.map((line) => [line.level, line.fields.blob]),
      [["info", "ab".repeat(32)]],
    );
  });

  test("an edit of an earlier message on a branch branches again from the right turn", async () => {
    const id = "rewind-0002";
    const client = harness.client();
    await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
    const beforeB = client.checkpoint(id);
    await runTurn(harness, client, turn(id, "B", "mB"), "answer B");
    await runTurn(
      harness,
      client,
      { ...turn(id, "B2", "mB"), checkpoint: beforeB ?? null },
      "answer B2",
    );
    const beforeC = client.checkpoint(id);
    await runTurn(harness, client, turn(id, "C", "mC"), "answer C");
    await runTurn(harness, client, turn(id, "D", "mD"), "answer D");
    // C edited on the branch: the branch's turns up to B2, then C2.
    const edited = await runTurn(
      harness,
      client,
      { ...turn(id, "C2", "mC"), checkpoint: beforeC ?? null },
      "answer C2",
    );
    assert.deepEqual(textsOf(edited, "user"), ["A", "B2", "C2"]);
    const next = await runTurn(harness, client, turn(id, "E", "mE"), "answer E");
    assert.deepEqual(textsOf(next, "user"), ["A", "B2", "C2", "E"]);
  });

  test("the first message edited: the model sees only the edited message", async () => {
    const id = "rewind-0003";
    const client = harness.client();
    const first = await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
    await runTurn(harness, client, turn(id, "B", "mB"), "answer B");
    // Its checkpoint was the empty initial state.
    const edited = await runTurn(
      harness,
      client,
      { ...turn(id, "A2", "mA"), checkpoint: null },
      "answer A2",
    );
    assert.deepEqual(textsOf(edited, "user"), ["A2"]);
    assert.deepEqual(textsOf(edited, "assistant"), []);
    // The same context as the first turn: the branch shows it again.
    assert.equal(messagesOf(edited).length, messagesOf(first).length);
  });

  test("a client that sends no checkpoint is never rewound", async () => {
    const id = "rewind-0004";
    const client = harness.client();
    await runTurn(harness, client, { ...turn(id, "A", "mA"), checkpoint: null }, "answer A");
    await runTurn(harness, client, { ...turn(id, "B", "mB"), checkpoint: null }, "answer B");
    const third = await runTurn(
      harness,
      client,
      { ...turn(id, "C", "mC"), checkpoint: null },
      "answer C",
    );
    assert.deepEqual(textsOf(third, "user"), ["A", "B", "C"]);
    assert.deepEqual(textsOf(third, "assistant"), ["answer A", "answer B"]);
    const state = await harness.store.load(id);
    assert.equal(state?.state.turnCount, 3);
  });
});

describe("rewinds and summaries (in-process)", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness();
  });
  after(() => harness.close());

  test("after a summarize the next turn continues; an edit from before it drops the summary", async () => {
    const id = "rewind-0007";
    const client = harness.client();
    await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
    await runTurn(harness, client, turn(id, "B", "mB"), "answer B");
    const beforeC = client.checkpoint(id);
    await runTurn(harness, client, turn(id, "C", "mC"), "answer C");
    await runTurn(harness, client, turn(id, "D", "mD"), "answer D");
    harness.reply({ text: "Summary: the user asked A to D." });
    const request = client.runRequest({ conversationId: id, text: "", modelId: MODEL });
    request.action = create(ConversationActionSchema, {
      action: { case: "summarizeAction", value: {} },
    });
    assert.equal((await client.startTurn(request).done).error, undefined);
    const after = await runTurn(harness, client, turn(id, "E", "mE"), "answer E");
    assert.match(after, /Summary: the user asked A to D\./);
    assert.equal(
      harness.logs.filter((line) => line.message.startsWith("rewind")).length,
      0,
      "the summarize turn is the client's last turn: a continuation",
    );
    const edited = await runTurn(
      harness,
      client,
      { ...turn(id, "C2", "mC"), checkpoint: beforeC ?? null },
      "answer C2",
    );
    assert.deepEqual(textsOf(edited, "user"), ["A", "B", "C2"]);
    assert.doesNotMatch(edited, /Summary: the user asked/, "the summary covered edited-away turns");
  });
});

describe("an edited message sent again, then a restart (process mode)", () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ mode: "process" });
  });
  after(() => harness.close());

  test("after the restart the next turn still continues the branch (found as the newest branch)", async () => {
    const id = "rewind-0005";
    const client = harness.client();
    await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
    const beforeB = client.checkpoint(id);
    await runTurn(harness, client, turn(id, "B", "mB"), "answer B");
    await runTurn(harness, client, turn(id, "C", "mC"), "answer C");
    const edited = await runTurn(
      harness,
      client,
      { ...turn(id, "B2", "mB"), checkpoint: beforeB ?? null },
      "answer B2",
    );
    assert.deepEqual(textsOf(edited, "user"), ["A", "B2"]);
    await harness.restart();
    const next = await runTurn(harness, client, turn(id, "D", "mD"), "answer D");
    assert.deepEqual(textsOf(next, "user"), ["A", "B2", "D"]);
    assert.ok(messagesBytes(next).startsWith(messagesBytes(edited)), "a prefix extension");
  });

  test("a restart while the branch's turn waits for a tool: the reconnected stream continues the branch", async () => {
    const id = "rewind-0006";
    const gate = createGate();
    let held = true;
    const client = harness.client({
      onExec: async (exec) => {
        if (held && exec.message.case === "writeArgs") await gate.promise;
        return undefined;
      },
    });
    await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
    const beforeB = client.checkpoint(id);
    await runTurn(harness, client, turn(id, "B", "mB"), "answer B");
    harness.reply(
      {
        toolCalls: [
          { id: "call_w", name: "write_file", arguments: { path: "b2.txt", content: "b2\n" } },
        ],
      },
      { text: "written" },
    );
    const first = harness.provider.requests.length;
    const edited = client.startTurn({ ...turn(id, "B2", "mB"), checkpoint: beforeB ?? null });
    await edited.waitFor(
      (m) => m.message.case === "execServerMessage" && m.message.value.message.case === "writeArgs",
    );
    const lost = edited.runSseLost();
    await harness.restart(); // SIGKILL while the branch's write waits in the client
    await lost;
    held = false;
    gate.open();
    edited.reconnectRunSse();
    const result = await edited.done;
    assert.equal(result.error, undefined);
    assert.equal(readFileSync(join(harness.workspace, "b2.txt"), "utf8"), "b2\n");
    const last = harness.provider.requests.at(-1)?.body ?? "";
    assert.ok(harness.provider.requests.length > first + 1);
    assert.deepEqual(textsOf(last, "user"), ["A", "B2"]);
    assert.ok(last.includes("call_w"), "the write's result reached the branch's next call");
    const next = await runTurn(harness, client, turn(id, "C", "mC"), "answer C");
    assert.deepEqual(textsOf(next, "user"), ["A", "B2", "C"]);
    assert.deepEqual(textsOf(next, "assistant"), ["answer A", "", "written"]);
  });
  test("a message sent during the branch's first turn, after a restart, continues the branch: no second branch", async () => {
    const id = "rewind-0008";
    const gate = createGate();
    const client = harness.client({
      onExec: async (exec) => {
        if (exec.message.case === "writeArgs") await gate.promise;
        return undefined;
      },
    });
    await runTurn(harness, client, turn(id, "A", "mA"), "answer A");
    const beforeB = client.checkpoint(id);
    await runTurn(harness, client, turn(id, "B", "mB"), "answer B");
    await runTurn(harness, client, turn(id, "C", "mC"), "answer C");
    harness.reply({
      toolCalls: [
        { id: "call_w", name: "write_file", arguments: { path: "b2.txt", content: "b2\n" } },
      ],
    });
    const edited = client.startTurn({ ...turn(id, "B2", "mB"), checkpoint: beforeB ?? null });
    await edited.waitFor(
      (m) => m.message.case === "execServerMessage" && m.message.value.message.case === "writeArgs",
    );
    try {
      const lost = edited.runSseLost();
      await harness.restart(); // nothing in memory remembers that the client is on the branch
      await lost;
      // A new message sent while the branch's first turn runs: its checkpoint still ends at A, a
      // turn the branch copied from the conversation, which has B and C after it.
      const next = await runTurn(
        harness,
        client,
        { ...turn(id, "D", "mD"), checkpoint: beforeB ?? null },
        "answer D",
      );
      assert.deepEqual(textsOf(next, "user"), ["A", "B2", "D"]);
      const after = await runTurn(harness, client, turn(id, "E", "mE"), "answer E");
      assert.deepEqual(textsOf(after, "user"), ["A", "B2", "D", "E"]);
      assert.ok(messagesBytes(after).startsWith(messagesBytes(next)), "a prefix extension");
    } finally {
      gate.open(); // the old stream's write is answered: nothing left waiting
    }
  });
});
