/**
 * A graceful shutdown (`Server.close`, what SIGTERM and SIGINT run) through the real server and
 * the protocol-faithful client, for both RunSSE responders, RunSSE over HTTP/2 and the HTTP/2
 * `Run` (docs/architecture.md "Shutdown"). A turn that has not ended stays as it is in the store
 * and is continued when its client reconnects after the restart, so the client must not be told
 * that it ended: its connection is dropped without an end of stream, whether a model call or a
 * client's tool call was running and however long the runner takes to settle, and after the
 * restart it reconnects and the turn completes. A turn that had ended gets its end: the
 * shutdown waits for it (here a client reading it late). The in-process harness restarts on
 * the same store; src/transport/e2e/subagents-crash.test.ts does it with SIGTERM to a server
 * process. Before this was decided, the client got `canceled` or a drop depending on timing.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import http2 from "node:http2";
import { join } from "node:path";
import { afterEach, describe, test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { createConnectTransport } from "@connectrpc/connect-node";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import type { Runner } from "../../runner/types.ts";
import { AgentClientMessageSchema } from "../cursor/gen/agent/v1/agent_stream_pb.js";
import { BidiRequestIdSchema, BidiService } from "../cursor/index.ts";
import { type CursorClientOptions, createRunRequest, type Turn } from "../testing/index.ts";
import { createGate, type Harness, MODEL, startHarness } from "./test-harness.ts";

const CONVERSATION = "5d4c3b2a-1111-4a5b-8c6d-7e8f9a0b1c2d";

const WAYS = [
  { name: "the direct responder", responder: "direct", httpVersion: "1.1" },
  { name: "Connect's responder", responder: "connect", httpVersion: "1.1" },
  { name: "HTTP/2 (Connect's responder)", responder: "direct", httpVersion: "2" },
] as const;

/** One turn of the event loop (the runner's slow shutdown counts them; no clock). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A runner whose shutdown takes a hundred turns of the event loop after its model calls stop. */
function slowToSettle(runner: Runner): Runner {
  return {
    ...runner,
    async shutdown() {
      await runner.shutdown();
      for (let turn = 0; turn < 100; turn += 1) await nextTurn();
    },
  };
}

/** How the client's RunSSE ended: lost (no end of stream) or ended by the server. */
async function firstEnd(turn: Turn, lost: Promise<unknown>): Promise<string> {
  return Promise.race([
    lost.then(() => "lost"),
    turn.done.then(
      (result) => `ended (${result.error === undefined ? "cleanly" : result.error.message})`,
      (error: unknown) => `failed (${String(error)})`,
    ),
  ]);
}

for (const way of WAYS) {
  describe(`graceful shutdown mid-turn, RunSSE with ${way.name}`, () => {
    let harness: Harness;
    afterEach(async () => harness.close());

    const start = async (
      options: Partial<CursorClientOptions> = {},
      runner?: (runner: Runner) => Runner,
    ) => {
      harness = await startHarness({
        server: { runSseResponder: way.responder },
        ...(runner === undefined ? {} : { runner }),
      });
      return harness.client({
        httpVersion: way.httpVersion,
        ...(way.httpVersion === "2" ? { runSseOverHttp2: true } : {}),
        ...options,
      });
    };

    test("while the model streams: the connection is dropped, not ended; after the restart the turn completes", async () => {
      const client = await start();
      harness.provider.reply({
        type: "stall",
        body: toChatCompletionSse({ text: "The first half, and the rest." }),
        events: 2,
      });
      const turn = client.startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
      const lost = turn.runSseLost();
      await harness.provider.request(0);
      await turn.waitFor((message) => message.message.case === "interactionUpdate");
      await harness.server.close();
      assert.equal(await firstEnd(turn, lost), "lost");
      assert.equal(turn.ended, false);
      // A shutdown is not a fault: nothing is logged at error.
      assert.deepEqual(
        harness.logs.filter((line) => line.level === "error").map((line) => line.fields),
        [],
      );

      // The interrupted call is made again with its saved body after the restart.
      harness.reply({ text: "The whole answer." });
      await harness.restart();
      turn.reconnectRunSse();
      const result = await turn.done;
      assert.equal(result.error, undefined, result.error?.message);
      assert.match(result.view.text, /The whole answer\.$/);
      assert.equal(
        (await harness.provider.request(1)).body,
        (await harness.provider.request(0)).body,
      );
      const saved = await harness.store.load(CONVERSATION);
      assert.equal(saved?.state.status, "final");
      assert.deepEqual(
        saved?.state.messages.map((message) => message.role),
        ["user", "assistant"],
      );
    });

    test("when the runner takes a while to settle, the stream still gets no end", async () => {
      // Stopping the model calls is awaited (server.ts `close`); however long it takes, a
      // stream whose turn goes on writes nothing meanwhile, its end included.
      const client = await start({}, slowToSettle);
      harness.provider.reply({
        type: "stall",
        body: toChatCompletionSse({ text: "The first half, and the rest." }),
        events: 2,
      });
      const turn = client.startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
      const lost = turn.runSseLost();
      await harness.provider.request(0);
      await turn.waitFor((message) => message.message.case === "interactionUpdate");
      await harness.server.close();
      assert.equal(await firstEnd(turn, lost), "lost");
      harness.reply({ text: "The whole answer." });
      await harness.restart();
      turn.reconnectRunSse();
      const result = await turn.done;
      assert.equal(result.error, undefined, result.error?.message);
      assert.match(result.view.text, /The whole answer\.$/);
    });

    test("while the client runs a tool: the connection is dropped, not ended; after the restart the turn completes", async () => {
      const held = createGate();
      const release = createGate();
      let reads = 0;
      const client = await start({
        onExec: async (exec) => {
          if (exec.message.case !== "readArgs") return undefined;
          reads += 1;
          if (reads === 1) {
            held.open();
            await release.promise;
          }
          return undefined; // run it for real
        },
      });
      writeFileSync(join(harness.workspace, "a.txt"), "alpha\n");
      harness.reply(
        { toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "a.txt" } }] },
        { text: "It says alpha." },
      );
      const turn = client.startTurn({
        conversationId: CONVERSATION,
        text: "read a.txt",
        modelId: MODEL,
      });
      const lost = turn.runSseLost();
      await held.promise;
      await harness.server.close();
      assert.equal(await firstEnd(turn, lost), "lost");
      assert.equal(turn.ended, false);

      await harness.restart();
      release.open();
      turn.reconnectRunSse();
      const result = await turn.done;
      assert.equal(result.error, undefined, result.error?.message);
      assert.equal(result.view.text, "It says alpha.");
      const saved = await harness.store.load(CONVERSATION);
      assert.equal(saved?.state.status, "final");
      const results = (saved?.state.messages ?? []).filter(
        (message) => message.role === "toolResult",
      );
      assert.equal(results.length, 1);
      assert.equal(results[0]?.role === "toolResult" && results[0].isError, false);
    });
  });
}

describe("graceful shutdown mid-turn, the HTTP/2 Run", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  test("the connection is dropped without the server's end; the turn is left as it is, not canceled", async () => {
    harness = await startHarness({ runner: slowToSettle });
    harness.provider.reply({
      type: "stall",
      body: toChatCompletionSse({ text: "The first half, and the rest." }),
      events: 2,
    });
    const turn = harness
      .client({ httpVersion: "2" })
      .startTurn({ conversationId: CONVERSATION, text: "hi", modelId: MODEL });
    assert.equal(turn.transport, "run");
    await harness.provider.request(0);
    await turn.waitFor((message) => message.message.case === "interactionUpdate");
    await harness.server.close();
    const result = await turn.done;
    // The stream was reset with the connection (Connect names the reset code), not ended by
    // the server's end of stream (which would be `[canceled] the server is shutting down`).
    assert.match(String(result.error?.rawMessage), /^http\/2 stream closed with error code/);
    assert.equal((await harness.store.load(CONVERSATION))?.state.status, "waiting_llm");
  });
});

describe("graceful shutdown after a turn ended", () => {
  let harness: Harness;
  afterEach(async () => harness.close());

  test("a turn that ended while its client was not reading gets its end before the connection goes", async () => {
    const ended = createGate();
    harness = await startHarness({ runner: (runner) => noticingTurnEnds(runner, ended.open) });
    // More text than the HTTP/2 flow-control windows hold for a client that does not read, so
    // the end is still queued when the shutdown begins (RunSSE over HTTP/2: Connect's handler).
    harness.reply({ text: "x".repeat(1_000_000), chunkSize: 16_384 });
    const requestId = randomUUID();
    const session = http2.connect(harness.server.url);
    session.on("error", () => {});
    try {
      const down = session.request({
        ":method": "POST",
        ":path": "/agent.v1.AgentService/RunSSE",
        "content-type": "application/connect+proto",
        "connect-protocol-version": "1",
        "x-request-id": requestId,
      });
      down.on("error", () => {});
      down.pause();
      down.end(
        encodeEnvelope(
          0,
          toBinary(BidiRequestIdSchema, create(BidiRequestIdSchema, { requestId })),
        ),
      );
      const bidi = createClient(
        BidiService,
        createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" }),
      );
      const runRequest = createRunRequest({
        conversationId: CONVERSATION,
        text: "hi",
        modelId: MODEL,
        workspace: harness.workspace,
      });
      const message = create(AgentClientMessageSchema, {
        message: { case: "runRequest", value: runRequest },
      });
      await bidi.bidiAppend({
        requestId: { requestId },
        data: Buffer.from(toBinary(AgentClientMessageSchema, message)).toString("hex"),
      });
      await ended.promise;
      const closing = harness.server.close();
      const chunks: Buffer[] = [];
      down.on("data", (chunk: Buffer) => chunks.push(chunk));
      const gone = new Promise((resolve) => down.once("close", resolve));
      down.resume();
      await gone;
      await closing;
      const body = Buffer.concat(chunks);
      const last = lastEnvelope(body);
      assert.equal(last.flags & 2, 2, "the last envelope is the end of stream");
      assert.equal(last.data.toString("utf8"), "{}");
    } finally {
      session.destroy();
    }
  });
});

/** Calls `onEnd` after every turn end the runner reports to a stream (TurnOutput.end). */
function noticingTurnEnds(runner: Runner, onEnd: () => void): Runner {
  const seen = new WeakSet<object>();
  return {
    ...runner,
    submit(conversationID, input, output, options) {
      if (!seen.has(output)) {
        seen.add(output);
        const end = output.end.bind(output);
        output.end = (outcome, state) => {
          end(outcome, state);
          onEnd();
        };
      }
      return runner.submit(conversationID, input, output, options);
    },
  };
}

/** The last Connect envelope of a response body: its flags and data. */
function lastEnvelope(body: Buffer): { flags: number; data: Buffer } {
  let offset = 0;
  let last: { flags: number; data: Buffer } = { flags: 0, data: Buffer.alloc(0) };
  while (offset + 5 <= body.length) {
    const length = body.readUInt32BE(offset + 1);
    last = { flags: body.readUInt8(offset), data: body.subarray(offset + 5, offset + 5 + length) };
    offset += 5 + length;
  }
  assert.equal(offset, body.length, "the body ends with a whole envelope");
  return last;
}
