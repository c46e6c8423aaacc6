/**
 * Routing a start (route-start.ts) through the real runner, loop and store and the LLM layer
 * against a fake provider on 127.0.0.1: the usual continuation reads nothing more from the store;
 * a rewind makes one branch (a replayed request finds it), cancels the source's turn it leaves
 * running, and later requests reach the branch through the binding of its request.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";
import { createLLM, createModelConfigs } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../llm/testing/fake-provider.ts";
import type { StartInput, ToolResultMessage } from "../loop/index.ts";
import { createMemoryStore, type Store } from "../store/index.ts";
import { createRunner } from "./runner.ts";
import type { Runner, TurnOutcome, TurnOutput } from "./types.ts";

const CONV = "conv-route";
const READ = {
  name: "read",
  description: "Read a file.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

/** An output that ends when the turn ends; tool calls wait until the test answers or fails them. */
function createOutput(): TurnOutput & {
  readonly ended: Promise<TurnOutcome>;
  readonly toolAsked: Promise<void>;
} {
  let endTurn!: (outcome: TurnOutcome) => void;
  let asked!: () => void;
  const ended = new Promise<TurnOutcome>((resolve) => {
    endTurn = resolve;
  });
  const toolAsked = new Promise<void>((resolve) => {
    asked = resolve;
  });
  return {
    ended,
    toolAsked,
    publish() {},
    runTool() {
      asked();
      return new Promise<ToolResultMessage>(() => {});
    },
    end(outcome) {
      endTurn(outcome);
    },
  };
}

/** Turn `n`'s start as the Cursor dialect builds it: request `r<n>`, message `m<n>`. */
function start(n: number, text = `message ${n}`, messageID = `m${n}`): StartInput {
  return {
    type: "start",
    inputID: `r${n}:0`,
    at: 1_767_225_600_000,
    userMessage: { role: "user", content: text, timestamp: 1_767_225_600_000 },
    context: [],
    settings: { model: "scripted", systemPrompt: "You are a test agent.", tools: [READ] },
    origin: `r${n}`,
    messageID,
  };
}

const route = (last: number | null, messageID: string) => ({
  lastTurnOrigin: last === null ? null : `r${last}`,
  messageID,
});

describe("routing a start", () => {
  let provider: FakeProvider;
  let store: Store;
  let runner: Runner;
  const reads = { load: 0, findRequestStream: 0 };

  beforeEach(async () => {
    provider = await startFakeProvider();
    const real = createMemoryStore();
    reads.load = 0;
    reads.findRequestStream = 0;
    store = {
      ...real,
      load: (id) => {
        reads.load += 1;
        return real.load(id);
      },
      findRequestStream: (id) => {
        reads.findRequestStream += 1;
        return real.findRequestStream(id);
      },
    } as Store;
    runner = makeRunner();
  });
  const makeRunner = () =>
    createRunner({
      store,
      llm: createLLM({
        models: createModelConfigs([
          {
            name: "scripted",
            api: "openai-compatible",
            model: "scripted-model",
            baseUrl: provider.url,
            apiKey: "sk-test-key",
          },
        ]),
      }),
      prepareWaitMs: 60_000,
    });
  afterEach(async () => {
    await runner.shutdown();
    await provider.close();
    await store.close();
  });

  /** Runs turn `n` on `conversationID` (with `last` as the client's last turn) to its answer. */
  async function runTurn(n: number, last: number | null, messageID = `m${n}`) {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: `answer ${n}` }) });
    const output = createOutput();
    const result = await runner.submit(CONV, start(n, `message ${n}`, messageID), output, {
      requestID: `r${n}`,
      route: route(last, messageID),
    });
    assert.equal((await output.ended).type, "final");
    return result;
  }

  test("a continuation adds no store read", async () => {
    await runTurn(1, null);
    await runTurn(2, 1);
    reads.load = 0;
    reads.findRequestStream = 0;
    const result = await runTurn(3, 2);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: CONV,
      reason: "last_turn",
    });
    assert.deepEqual(reads, { load: 0, findRequestStream: 0 });
  });

  test("a rewind makes one branch; a replay of its request finds it; the next turn reaches it", async () => {
    await runTurn(1, null);
    await runTurn(2, 1);
    await runTurn(3, 2);
    const edited = await runTurn(4, 1, "m2");
    const branch = `${CONV}~edit~r4`;
    assert.deepEqual(edited.type === "applied" && edited.routed, {
      conversationID: branch,
      rewind: { from: CONV, fromTurn: 3, afterTurn: 1, dropped: 4, running: false },
    });
    const stored = await store.load(branch);
    assert.deepEqual(
      stored?.state.messages.map((message) => message.role),
      ["user", "assistant", "user", "assistant"],
    );
    assert.equal(stored?.state.turnCount, 2);
    // The same request again: a duplicate on the same branch, nothing new.
    const replay = await runner.submit(CONV, start(4, "message 4", "m2"), createOutput(), {
      requestID: "r4",
      route: route(1, "m2"),
    });
    assert.equal(replay.type, "duplicate");
    assert.equal(replay.routed?.conversationID, branch);
    assert.equal((await store.load(branch))?.version, stored?.version);
    // The next turn shows the branch's turn last: the branch remembered in memory, no store read.
    reads.load = 0;
    reads.findRequestStream = 0;
    const next = await runTurn(5, 4);
    assert.equal(next.routed?.conversationID, branch);
    assert.deepEqual(reads, { load: 0, findRequestStream: 0 });
    assert.equal(await runner.follow(CONV, route(4, ""), "r6"), branch);
    assert.equal(await runner.follow(CONV, route(3, ""), "r6"), CONV);
    // A new runner on the same store (a restart: nothing in memory) finds it through the binding.
    await runner.shutdown();
    runner = makeRunner();
    reads.findRequestStream = 0;
    assert.equal(await runner.follow(CONV, route(5, ""), "r6"), branch);
    assert.equal(reads.findRequestStream, 1);
  });

  test("a rewind from inside a running turn cancels that turn", async () => {
    await runTurn(1, null);
    provider.reply({
      type: "sse",
      body: toChatCompletionSse({
        toolCalls: [{ id: "call_1", name: "read", arguments: { path: "a.ts" } }],
      }),
    });
    const running = createOutput();
    await runner.submit(CONV, start(2), running, { requestID: "r2", route: route(1, "m2") });
    await running.toolAsked;
    // Turn 2's message edited while it waits for its tool.
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 2b" }) });
    const output = createOutput();
    const result = await runner.submit(CONV, start(3, "message 2b", "m2"), output, {
      requestID: "r3",
      route: route(1, "m2"),
    });
    assert.equal(result.routed?.rewind?.running, true);
    assert.equal((await running.ended).type, "canceled");
    assert.equal((await output.ended).type, "final");
    assert.equal((await store.load(CONV))?.state.status, "canceled");
  });

  test("a new message while a branch's first turn runs continues the branch (R4 on the branch)", async () => {
    await runTurn(1, null);
    await runTurn(2, 1);
    await runTurn(3, 2);
    provider.reply({
      type: "sse",
      body: toChatCompletionSse({
        toolCalls: [{ id: "call_1", name: "read", arguments: { path: "a.ts" } }],
      }),
    });
    // Turn 2 edited: the branch's first turn waits for a tool.
    const running = createOutput();
    const edited = await runner.submit(CONV, start(4, "message 2b", "m2"), running, {
      requestID: "r4",
      route: route(1, "m2"),
    });
    const branch = `${CONV}~edit~r4`;
    assert.equal(edited.routed?.conversationID, branch);
    await running.toolAsked;
    // A new message sent meanwhile, with the checkpoint from before the edited turn.
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 5" }) });
    const output = createOutput();
    const next = await runner.submit(CONV, start(5), output, {
      requestID: "r5",
      route: route(1, "m5"),
    });
    assert.deepEqual(next.routed, { conversationID: branch, reason: "interrupted_turn" });
    assert.equal((await running.ended).type, "canceled");
    assert.equal((await output.ended).type, "final");
    const messages = (await store.load(branch))?.state.messages ?? [];
    assert.deepEqual(
      messages.filter((message) => message.role === "user").map((message) => message.content),
      ["message 1", "message 2b", "message 5"],
    );
  });
});
