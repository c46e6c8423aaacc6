/**
 * What goes wrong in real use, end to end: RunSSE dropped and reconnected, appends repeated and
 * out of order, cancels while the model streams and while a tool runs, provider failures before
 * and during the stream, a server restart mid-turn, a client that goes away.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import { AgentClientMessageSchema, AgentService, BidiService } from "../cursor/index.ts";
import { createGate, type Harness, MODEL, readRunSse, startHarness } from "./test-harness.ts";

const CONVERSATION = "5d4c3b2a-2222-4a5b-8c6d-7e8f9a0b1c2d";

const readCall = {
  toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "notes.txt" } }],
};

const heartbeat = () =>
  create(AgentClientMessageSchema, { message: { case: "clientHeartbeat", value: {} } });
const cancelMessage = (reason: string) =>
  create(AgentClientMessageSchema, {
    message: {
      case: "conversationAction",
      value: { action: { case: "cancelAction", value: { reason } } },
    },
  });

describe("robustness end to end", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  test("RunSSE dropped and reconnected mid-turn: nothing lost, nothing repeated", async () => {
    harness = await startHarness();
    writeFileSync(join(harness.workspace, "notes.txt"), "remember the milk\n");
    harness.reply(
      { text: "Reading your notes.", ...readCall },
      { text: "They say: remember the milk." },
    );
    const gate = createGate();
    const client = harness.client({
      onExec: async () => {
        await gate.promise;
        return undefined; // then run it for real
      },
    });
    const turn = client.startTurn({
      conversationId: CONVERSATION,
      text: "What do my notes say?",
      modelId: MODEL,
    });
    await turn.waitFor((m) => m.message.case === "execServerMessage");
    const before = turn.messages.length;
    await turn.dropRunSse();
    turn.reconnectRunSse();
    gate.open();
    const result = await turn.done;
    assert.equal(result.error, undefined);
    assert.equal(result.view.text, "Reading your notes.They say: remember the milk.");
    assert.ok(turn.connections >= 2, "a second RunSSE connection was made");
    assert.ok(result.messages.length > before);
    const execs = result.view.kinds.filter((k) => k.startsWith("exec:"));
    assert.deepEqual(execs, ["exec:readArgs"], "the exec was not sent twice");
  });

  test("a BidiAppend delivered twice is applied once", async () => {
    harness = await startHarness();
    harness.reply({ text: "Hello once." });
    const client = harness.client();
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    await turn.waitFor((m) => m.message.case === "interactionUpdate");
    await turn.appendAt(
      0,
      create(AgentClientMessageSchema, { message: { case: "runRequest", value: turn.runRequest } }),
    );
    const result = await turn.done;
    assert.equal(result.error, undefined);
    assert.equal(result.view.text, "Hello once.");
    assert.equal(harness.provider.requests.length, 1);
  });

  test("appends out of order are applied in seqno order", async () => {
    harness = await startHarness();
    harness.provider.reply({
      type: "stall",
      body: toChatCompletionSse({ text: "a long answer" }),
      events: 2,
    });
    const client = harness.client();
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    await turn.waitFor((m) => m.message.case === "interactionUpdate");
    const first = turn.reserveSeqno();
    const second = turn.reserveSeqno();
    const cancelLater = turn.appendAt(second, cancelMessage("stop after the heartbeat"));
    await turn.appendAt(first, heartbeat());
    await cancelLater;
    const result = await turn.done;
    assert.equal(result.error?.code, Code.Canceled);
    assert.ok(result.view.turnEnded);
  });

  test("cancel while the model streams: canceled end, turn_ended, provider request closed", async () => {
    harness = await startHarness();
    harness.provider.reply({
      type: "stall",
      body: toChatCompletionSse({ text: "a long answer" }),
      events: 3,
    });
    const client = harness.client();
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    await turn.waitFor(
      (m) => m.message.case === "interactionUpdate" && m.message.value.message.case === "textDelta",
    );
    turn.cancel("user pressed stop");
    const result = await turn.done;
    assert.equal(result.error?.code, Code.Canceled);
    assert.ok(result.view.turnEnded);
    await (await harness.provider.request(0)).closed;
    const loaded = await harness.store.load(CONVERSATION);
    assert.equal(loaded?.state.status, "canceled");
    assert.deepEqual(
      loaded?.state.messages.map((m) => m.role),
      ["user"],
      "no partial answer committed",
    );
  });

  test("cancel while a tool runs: the exec is aborted and the call gets a not-run result", async () => {
    harness = await startHarness();
    harness.reply({
      toolCalls: [{ id: "call_sleep", name: "shell", arguments: { command: "sleep 30" } }],
    });
    const client = harness.client();
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "wait", modelId: MODEL });
    await turn.waitForSent((sent) => sent.kind === "shell:start");
    turn.cancel("taking too long");
    const result = await turn.done;
    assert.equal(result.error?.code, Code.Canceled);
    assert.ok(result.view.kinds.includes("execServerControlMessage"), "abort{id} was sent");
    const last = (await harness.store.load(CONVERSATION))?.state.messages.at(-1);
    assert.ok(last?.role === "toolResult" && last.isError && last.toolCallId === "call_sleep");
    // An ordinary cancel is not a fault: nothing is logged at error.
    await harness.server.close();
    assert.deepEqual(
      harness.logs.filter((line) => line.level === "error").map((line) => line.fields),
      [],
    );
  });

  test("a provider 500 before the stream is retried with the same body", async () => {
    harness = await startHarness();
    harness.provider.reply({
      type: "status",
      status: 500,
      body: '{"error":{"message":"overloaded"}}',
    });
    harness.reply({ text: "Worked the second time." });
    const result = await harness
      .client()
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL }).done;
    assert.equal(result.error, undefined);
    assert.equal(result.view.text, "Worked the second time.");
    const [a, b] = [await harness.provider.request(0), await harness.provider.request(1)];
    assert.equal(a.body, b.body);
  });

  test("a provider dropping mid-stream ends the turn with a Connect error and commits nothing", async () => {
    harness = await startHarness();
    harness.provider.reply({
      type: "drop",
      body: toChatCompletionSse({ text: "partial answer here" }),
      events: 3,
    });
    const result = await harness
      .client()
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL }).done;
    assert.ok(result.error !== undefined);
    assert.equal(result.error.code, Code.Unavailable);
    assert.ok(result.error.details.length > 0, "ErrorDetails attached");
    assert.ok(result.view.turnEnded);
    const loaded = await harness.store.load(CONVERSATION);
    assert.equal(loaded?.state.status, "failed");
    assert.deepEqual(
      loaded?.state.messages.map((m) => m.role),
      ["user"],
    );
  });

  test("the server restarted mid-turn: the client reconnects and the turn finishes", async () => {
    harness = await startHarness({ mode: "process" });
    writeFileSync(join(harness.workspace, "notes.txt"), "buy bread\n");
    harness.reply({ text: "Reading.", ...readCall }, { text: "Your notes: buy bread." });
    const gate = createGate();
    let held = true;
    const client = harness.client({
      onExec: async () => {
        if (held) await gate.promise; // the first request waits until the server has gone
        return undefined;
      },
    });
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "notes?", modelId: MODEL });
    await turn.waitFor((m) => m.message.case === "execServerMessage");
    const lost = turn.runSseLost();
    await harness.restart(); // SIGKILL: no end frame, no cleanup
    await lost;
    held = false;
    gate.open(); // the reply to the first server is lost with it
    turn.reconnectRunSse();
    const result = await turn.done;
    assert.equal(result.error, undefined);
    assert.match(result.view.text, /Your notes: buy bread\.$/);
    const loaded = await harness.store.load(CONVERSATION);
    assert.deepEqual(
      loaded?.state.messages.map((m) => m.role),
      ["user", "assistant", "toolResult", "assistant"],
    );
    const result0 = loaded?.state.messages[2];
    assert.ok(result0?.role === "toolResult" && !result0.isError);
  });

  test("after a restart, a RunSSE for an earlier stream of a conversation is refused at once; the newest still ends its turn", {
    timeout: 60_000,
  }, async () => {
    // RunSSE in Connect's own framing, so that a plain Connect client reads it (readRunSse).
    harness = await startHarness({ mode: "process", server: { runSseContentType: "connect" } });
    harness.reply({ text: "first answer" }, { text: "second answer" });
    const client = harness.client();
    const first = client.startTurn({ conversationId: CONVERSATION, text: "one", modelId: MODEL });
    assert.equal((await first.done).error, undefined);
    const second = client.startTurn({ conversationId: CONVERSATION, text: "two", modelId: MODEL });
    assert.equal((await second.done).view.text, "second answer");
    await harness.restart(); // SIGKILL: both streams are gone from memory

    // Only the newest stream of the conversation kept its saved run request.
    assert.equal((await harness.store.findRequestStream(first.requestId))?.clientState, null);
    const older = await readRunSse(harness, first.requestId);
    assert.deepEqual(older.kinds, []);
    assert.equal(older.error?.code, Code.NotFound);
    assert.match(
      older.error?.rawMessage ?? "",
      /cannot be picked up again: nothing is saved for it/,
    );
    // An append naming it is refused the same way (and keeps nothing).
    const bidi = createClient(
      BidiService,
      createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" }),
    );
    const data = Buffer.from(toBinary(AgentClientMessageSchema, heartbeat())).toString("hex");
    const append = await bidi
      .bidiAppend({ requestId: { requestId: first.requestId }, data })
      .catch((error: unknown) => error);
    assert.equal((append as { code?: unknown }).code, Code.NotFound);
    assert.match(
      String((append as { rawMessage?: unknown }).rawMessage),
      /cannot be picked up again/,
    );

    // The newest is picked up as before: its ended turn's checkpoint and a clean turn end.
    const newest = await readRunSse(harness, second.requestId);
    assert.equal(newest.error, undefined);
    assert.ok(newest.kinds.includes("conversationCheckpointUpdate"), newest.kinds.join());
    assert.equal((await harness.store.load(CONVERSATION))?.state.status, "final");
  });

  test("a client that goes away and does not come back: the turn is canceled after the grace period", async () => {
    harness = await startHarness({ server: { stream: { ...defaultsForGrace() } } });
    harness.provider.reply({
      type: "stall",
      body: toChatCompletionSse({ text: "slow" }),
      events: 2,
    });
    const client = harness.client();
    const turn = client.startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    await turn.waitFor((m) => m.message.case === "interactionUpdate");
    turn.dropRunSse();
    await (await harness.provider.request(0)).closed;
    const loaded = await harness.store.load(CONVERSATION);
    assert.equal(loaded?.state.status, "canceled");
  });

  test("heartbeats flow while the model is silent", async () => {
    harness = await startHarness({
      server: { stream: { ...defaultsForGrace(), heartbeatMs: 20 } },
    });
    harness.provider.reply({
      type: "stall",
      body: toChatCompletionSse({ text: "slow" }),
      events: 1,
    });
    const turn = harness
      .client()
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    const first = await turn.waitFor((m) => isHeartbeat(m));
    await turn.waitFor((m) => isHeartbeat(m) && m !== first);
    turn.cancel("done waiting");
    assert.equal((await turn.done).error?.code, Code.Canceled);
  });

  test("a late RunSSE on an earlier request id ends at once and leaves the running turn alone", async () => {
    harness = await startHarness({
      server: { streamRetentionMs: 0, runSseContentType: "connect" },
    });
    harness.reply({ text: "first answer" });
    harness.provider.reply({
      type: "stall",
      body: toChatCompletionSse({ text: "second answer" }),
      events: 2,
    });
    const client = harness.client();
    const first = client.startTurn({ conversationId: CONVERSATION, text: "one", modelId: MODEL });
    assert.equal((await first.done).error, undefined);
    const second = client.startTurn({ conversationId: CONVERSATION, text: "two", modelId: MODEL });
    await second.waitFor((m) => isTextDelta(m));
    // The first request id comes back (its stream is gone from memory; the store still binds it,
    // but turn two's binding released what it saved): refused at once, nothing sent.
    const late = await readRunSse(harness, first.requestId);
    assert.deepEqual(late.kinds, []);
    assert.equal(late.error?.code, Code.NotFound);
    assert.match(late.error?.rawMessage ?? "", /cannot be picked up again/);
    assert.equal(
      (await harness.store.load(CONVERSATION))?.state.status,
      "waiting_llm",
      "turn two goes on",
    );
    second.cancel("done");
    const result = await second.done;
    assert.equal(result.error?.code, Code.Canceled);
    assert.ok(result.view.text.length > 0 && "second answer".startsWith(result.view.text));
  });

  test("a turn whose RunSSE never connects is canceled after the grace period", async () => {
    harness = await startHarness({ server: { stream: defaultsForGrace() } });
    harness.provider.reply({
      type: "stall",
      body: toChatCompletionSse({ text: "unread" }),
      events: 1,
    });
    const bidi = createClient(
      BidiService,
      createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" }),
    );
    const client = harness.client();
    const run = client.runRequest({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    const data = Buffer.from(
      toBinary(
        AgentClientMessageSchema,
        create(AgentClientMessageSchema, { message: { case: "runRequest", value: run } }),
      ),
    ).toString("hex");
    await bidi.bidiAppend({ requestId: { requestId: "never-read" }, data });
    await (await harness.provider.request(0)).closed;
    assert.equal((await harness.store.load(CONVERSATION))?.state.status, "canceled");
  });

  test("an HTTP/2 Run the client abandons cancels its turn", async () => {
    harness = await startHarness();
    harness.provider.reply({
      type: "stall",
      body: toChatCompletionSse({ text: "a long answer" }),
      events: 2,
    });
    const turn = harness
      .client({ httpVersion: "2" })
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    await turn.waitFor((m) => isTextDelta(m));
    await turn.close("the user closed the terminal").catch(() => {});
    await (await harness.provider.request(0)).closed;
    const settled = await harness.store.load(CONVERSATION);
    assert.equal(settled?.state.status, "canceled");
  });

  test("a repeated append gets the original's outcome, failure included", async () => {
    harness = await startHarness();
    const bidi = createClient(
      BidiService,
      createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" }),
    );
    const hex = (message: ReturnType<typeof heartbeat>) =>
      Buffer.from(toBinary(AgentClientMessageSchema, message)).toString("hex");
    // The stream exists (its RunSSE opened it) but carries no turn.
    const downlink = new AbortController();
    const agent = createClient(
      AgentService,
      createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" }),
    );
    const reading = (async () => {
      for await (const _ of agent.runSSE({ requestId: "no-turn" }, { signal: downlink.signal })) {
        // heartbeats only
      }
    })().catch(() => {});
    await bidi.bidiAppend({ requestId: { requestId: "no-turn" }, data: hex(heartbeat()) });
    const cancelWithoutTurn = {
      requestId: { requestId: "no-turn" },
      appendSeqno: 1n,
      data: hex(cancelMessage("x")),
    };
    const first = await bidi.bidiAppend(cancelWithoutTurn).catch((e: unknown) => e);
    const again = await bidi.bidiAppend(cancelWithoutTurn).catch((e: unknown) => e);
    assert.equal((first as { code?: unknown }).code, Code.NotFound);
    assert.equal(
      (again as { code?: unknown }).code,
      Code.NotFound,
      "the retry is not acknowledged as done",
    );
    downlink.abort();
    await reading;
  });

  test("appends for unknown request ids are refused and keep nothing; streams are capped", async () => {
    harness = await startHarness({ server: { maxStreams: 2 } });
    const transport = createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" });
    const bidi = createClient(BidiService, transport);
    const data = Buffer.from(toBinary(AgentClientMessageSchema, heartbeat())).toString("hex");
    for (let i = 0; i < 5; i += 1) {
      const refused = await bidi
        .bidiAppend({ requestId: { requestId: `random-${i}` }, data })
        .catch((e: unknown) => e);
      assert.equal((refused as { code?: unknown }).code, Code.NotFound);
    }
    const tooLong = await bidi
      .bidiAppend({ requestId: { requestId: "x".repeat(10_000) }, data })
      .catch((e: unknown) => e);
    assert.equal((tooLong as { code?: unknown }).code, Code.InvalidArgument);
    // Nothing was kept for them: two live turns still fit under the cap of two streams.
    harness.provider.reply({ type: "hang" }, { type: "hang" });
    const client = harness.client();
    const one = client.startTurn({ conversationId: CONVERSATION, text: "a", modelId: MODEL });
    const two = client.startTurn({
      conversationId: `${CONVERSATION}-2`,
      text: "b",
      modelId: MODEL,
    });
    await harness.provider.request(1);
    // Both are live: a third is over the cap, and reaches no model.
    const third = await client.startTurn({
      conversationId: `${CONVERSATION}-3`,
      text: "c",
      modelId: MODEL,
    }).done;
    assert.equal(third.error?.code, Code.ResourceExhausted);
    assert.equal(harness.provider.requests.length, 2, "the third turn reached no model");
    // Ended streams are kept only for late reconnects: they make room for new ones.
    await one.cancel("done");
    await two.cancel("done");
    await Promise.all([one.done, two.done]);
    harness.reply({ text: "four" });
    const fourth = await client.startTurn({
      conversationId: `${CONVERSATION}-4`,
      text: "d",
      modelId: MODEL,
    }).done;
    assert.equal(fourth.error, undefined);
    assert.equal(fourth.view.text, "four");
  });
});

function defaultsForGrace() {
  return {
    heartbeatMs: 5_000,
    reconnectGraceMs: 50,
    appendGapTimeoutMs: 2_000,
    maxAppendsAhead: 16,
    lateResultGraceMs: 2_000,
  };
}

function isHeartbeat(message: { message: { case?: string; value?: unknown } }): boolean {
  const value = message.message.value as { message?: { case?: string } } | undefined;
  return message.message.case === "interactionUpdate" && value?.message?.case === "heartbeat";
}
function isTextDelta(message: { message: { case?: string; value?: unknown } }): boolean {
  const value = message.message.value as { message?: { case?: string } } | undefined;
  return message.message.case === "interactionUpdate" && value?.message?.case === "textDelta";
}
