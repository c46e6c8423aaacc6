/**
 * A turn start that awaits the store look-up of its checkpoint's last turn (turn-blob-origins.ts)
 * while its stream ends (the client closed its Run stream: `abandon`). `abandon`'s cancel finds
 * no turn yet, and the reconnect grace never starts on an ended stream, so a turn submitted after
 * the look-up would run with nobody reading it and nothing to cancel it: it must not start.
 * (Review of the blobmap branch, M1; #19.)
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { createLLM, createModelConfigs } from "../../llm/index.ts";
import { toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import { startFakeProvider } from "../../llm/testing/fake-provider.ts";
import { createRunner } from "../../runner/runner.ts";
import type { Runner } from "../../runner/types.ts";
import { createMemoryStore, type TurnBlob } from "../../store/index.ts";
import { createAgentStream } from "../agent-stream.ts";
import { AgentClientMessageSchema } from "../cursor/gen/agent/v1/agent_stream_pb.js";
import { ConversationStateStructureSchema } from "../cursor/gen/agent/v1/conversation_state_pb.js";
import { toProtocolError } from "../cursor/index.ts";
import { createRecordingLog, silentLog } from "../log.ts";
import { DEFAULT_SERVER_OPTIONS } from "../server.ts";
import { createRunRequest } from "../testing/run-request.ts";
import { createTurnBlobOrigins } from "../turn-blob-origins.ts";
import { createTurnStart } from "./turn-start.ts";

/** Turn blob origins whose store look-up is held until the test releases it. */
function heldLookUp() {
  const held: { release?: (value: TurnBlob | null) => void; asked: Promise<void> } = {
    asked: Promise.resolve(),
  };
  let asked!: () => void;
  held.asked = new Promise((resolve) => (asked = resolve));
  const turnBlobs = createTurnBlobOrigins({
    store: {
      recordTurnBlobs: async () => {},
      findTurnBlobsOf: async () => [],
      findTurnBlob: () =>
        new Promise((resolve) => {
          held.release = resolve;
          asked();
        }),
    },
    log: silentLog,
  });
  return { held, turnBlobs };
}

/** A run request whose checkpoint's last turn is a blob it does not send back. */
function blobRunRequest(summarize = false) {
  const blobID = createHash("sha256").update("a turn written by another instance").digest();
  const request = createRunRequest({
    conversationId: "conv-1",
    text: summarize ? "/summarize" : "hi",
    modelId: "m",
    workspace: "/tmp",
    checkpoint: create(ConversationStateStructureSchema, { turns: [blobID] }),
  });
  assert.equal(request.preFetchedBlobs.length, 0);
  return { request, blobID };
}

const models = (baseUrl: string) =>
  createLLM({
    models: createModelConfigs([
      { api: "openai-compatible", baseUrl, apiKey: "sk-test", name: "m", model: "m" },
    ]),
  });

test("a stream abandoned during its turn start's look-up submits only the cancel, not the turn", async () => {
  const llm = models("http://127.0.0.1:9");
  const real = createRunner({ store: createMemoryStore(), llm });
  const submitted: string[] = [];
  const runner: Runner = {
    ...real,
    submit: (conversationID, input, output, options) => {
      submitted.push(input.type);
      return real.submit(conversationID, input, output, options);
    },
  };
  const { held, turnBlobs } = heldLookUp();
  const stream = createAgentStream("req-1", {
    runner,
    models: llm,
    now: () => 0,
    log: silentLog,
    options: DEFAULT_SERVER_OPTIONS.stream,
    turnBlobs,
  });
  const { request, blobID } = blobRunRequest();
  const applied = stream.append(
    0,
    create(AgentClientMessageSchema, { message: { case: "runRequest", value: request } }),
  );
  await held.asked;
  await stream.abandon(toProtocolError({ type: "run_stream_closed" }));
  assert.equal(stream.outbound.ended, true);
  held.release?.({ blobID: blobID.toString("hex"), conversationID: "conv-1", requestID: "r0" });
  await applied;
  assert.deepEqual(submitted, ["cancel"]);
  await real.shutdown();
  assert.equal((await real.inspect("conv-1"))?.committed.messages.length ?? 0, 0);
});

test("with the real runner and a provider on 127.0.0.1: the abandoned start never calls the model", async () => {
  const provider = await startFakeProvider();
  provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer" }) });
  const llm = models(provider.url);
  const runner = createRunner({ store: createMemoryStore(), llm });
  const { held, turnBlobs } = heldLookUp();
  const stream = createAgentStream("req-1", {
    runner,
    models: llm,
    now: Date.now,
    log: silentLog,
    options: DEFAULT_SERVER_OPTIONS.stream,
    turnBlobs,
  });
  const { request } = blobRunRequest();
  const applied = stream.append(
    0,
    create(AgentClientMessageSchema, { message: { case: "runRequest", value: request } }),
  );
  await held.asked;
  await stream.abandon(toProtocolError({ type: "run_stream_closed" }));
  held.release?.(null);
  await applied;
  try {
    const state = await runner.inspect("conv-1");
    assert.equal(state?.committed.turnCount ?? 0, 0, "no turn was started");
    assert.equal(state?.pending ?? null, null, "no turn is running");
  } finally {
    await runner.shutdown();
    await provider.close();
  }
  assert.equal(provider.requests.length, 0);
});

test("turn starts share their methods and keep their state apart: each stream logs its own unresolved last turn once", async () => {
  const { log, lines } = createRecordingLog();
  const llm = models("http://127.0.0.1:9");
  const runner = createRunner({ store: createMemoryStore(), llm });
  const turnBlobs = createTurnBlobOrigins({
    store: {
      recordTurnBlobs: async () => {},
      findTurnBlob: async () => null,
      findTurnBlobsOf: async () => [],
    },
    log: silentLog,
  });
  const deps = { runner, models: llm, now: () => 0, log, turnBlobs };
  const streams = ["req-a", "req-b"].map((id) =>
    createAgentStream(id, { ...deps, options: DEFAULT_SERVER_OPTIONS.stream }),
  );
  for (const [index, stream] of streams.entries()) {
    const { request } = blobRunRequest();
    request.conversationId = `conv-${index}`;
    await stream.append(
      0,
      create(AgentClientMessageSchema, { message: { case: "runRequest", value: request } }),
    );
  }
  const unresolved = lines.filter((line) => line.message.startsWith("the checkpoint's last turn"));
  assert.deepEqual(
    unresolved.map((line) => line.fields.request),
    ["req-a", "req-b"],
  );
  for (const stream of streams) stream.close("test over");
  await runner.shutdown();

  const state = { requestID: "x" } as unknown as Parameters<typeof createTurnStart>[0];
  const output = {} as unknown as Parameters<typeof createTurnStart>[1];
  const one = createTurnStart(state, output, { start: () => {} });
  const two = createTurnStart(state, output, { start: () => {} });
  assert.equal(one.start, two.start);
  assert.equal(one.resume, two.resume);
  assert.equal(one.compact, two.compact);
  assert.equal("then" in one, false);
});

test("a turn nobody reads starts the stream's reconnect grace on the grace itself, not on the turn start's record", async () => {
  // The grace is kept whole and called as `grace.start()` (review of turnheap, L2): a grace with
  // shared methods (its state on `this`) must get itself as `this`, or its timer would be put
  // where its `clear` never looks.
  const llm = models("http://127.0.0.1:9");
  const runner = createRunner({ store: createMemoryStore(), llm });
  const stream = createAgentStream("req-g", {
    runner,
    models: llm,
    now: () => 0,
    log: silentLog,
    options: DEFAULT_SERVER_OPTIONS.stream,
  });
  // The stream's own state and output (members of its record, not of the public type).
  const { state, output } = stream as unknown as {
    state: Parameters<typeof createTurnStart>[0];
    output: Parameters<typeof createTurnStart>[1];
  };
  assert.equal(state.outbound.subscribed, false);
  const receivers: unknown[] = [];
  const grace = {
    start(this: unknown) {
      receivers.push(this);
    },
  };
  const turns = createTurnStart(state, output, grace);
  const request = createRunRequest({
    conversationId: "conv-g",
    text: "/summarize",
    modelId: "m",
    workspace: "/tmp",
  });
  // A new conversation has nothing to compact: the runner rejects the turn after the grace starts.
  await turns.compact(0, request);
  assert.equal(receivers.length, 1);
  assert.equal(receivers[0], grace);
  stream.close("test over");
  await runner.shutdown();
});
