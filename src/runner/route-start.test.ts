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
  const reads = { load: 0, findRequestStream: 0, findNewestConversation: 0 };
  const resetReads = () => {
    reads.load = 0;
    reads.findRequestStream = 0;
    reads.findNewestConversation = 0;
  };

  beforeEach(async () => {
    provider = await startFakeProvider();
    const real = createMemoryStore();
    resetReads();
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
      findNewestConversation: (prefix, without) => {
        reads.findNewestConversation += 1;
        return real.findNewestConversation(prefix, without);
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
    resetReads();
    const result = await runTurn(3, 2);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: CONV,
      reason: "last_turn",
    });
    assert.deepEqual(reads, { load: 0, findRequestStream: 0, findNewestConversation: 0 });
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
    resetReads();
    const next = await runTurn(5, 4);
    assert.equal(next.routed?.conversationID, branch);
    assert.deepEqual(reads, { load: 0, findRequestStream: 0, findNewestConversation: 0 });
    assert.equal(await runner.follow(CONV, route(4, ""), "r6"), branch);
    assert.equal(await runner.follow(CONV, route(3, ""), "r6"), CONV);
    // A new runner on the same store (a restart: nothing in memory) finds it as X's newest branch.
    await runner.shutdown();
    runner = makeRunner();
    resetReads();
    assert.equal(await runner.follow(CONV, route(5, ""), "r6"), branch);
    assert.deepEqual(
      { ...reads, load: 0 },
      { load: 0, findRequestStream: 0, findNewestConversation: 1 },
    );
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
  /** Turns 1–3, then turn 2's message edited (request r4): the branch's first turn waits for a tool. */
  async function editWhileToolWaits() {
    await runTurn(1, null);
    await runTurn(2, 1);
    await runTurn(3, 2);
    provider.reply({
      type: "sse",
      body: toChatCompletionSse({
        toolCalls: [{ id: "call_1", name: "read", arguments: { path: "a.ts" } }],
      }),
    });
    const running = createOutput();
    const edited = await runner.submit(CONV, start(4, "message 2b", "m2"), running, {
      requestID: "r4",
      route: route(1, "m2"),
    });
    assert.equal(edited.routed?.conversationID, `${CONV}~edit~r4`);
    await running.toolAsked;
    return running;
  }

  /** Turn 5 (`text`), sent with the client's last turn r1 (before the edited one). */
  const sendFifth = (output: TurnOutput) =>
    runner.submit(CONV, start(5), output, { requestID: "r5", route: route(1, "m5") });

  const userTexts = async (conversationID: string) =>
    ((await store.load(conversationID))?.state.messages ?? [])
      .filter((message) => message.role === "user")
      .map((message) => message.content);

  test("after a restart, a new message while a branch's first turn waits continues the newest branch, not a second branch", async () => {
    await editWhileToolWaits();
    const branch = `${CONV}~edit~r4`;
    // A restart (or X's entry evicted, or the next request on another instance): nothing remembered.
    await runner.shutdown();
    runner = makeRunner();
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 5" }) });
    const output = createOutput();
    const next = await sendFifth(output);
    assert.deepEqual(next.routed, { conversationID: branch, reason: "interrupted_turn" });
    assert.equal((await output.ended).type, "final");
    assert.equal(await store.load(`${CONV}~edit~r5`), null);
    assert.deepEqual(await userTexts(branch), ["message 1", "message 2b", "message 5"]);
    // Remembered afterwards: the next turn reads nothing more from the store.
    resetReads();
    const sixth = await runTurn(6, 5);
    assert.deepEqual(sixth.routed, { conversationID: branch, reason: "last_turn" });
    assert.deepEqual(reads, { load: 0, findRequestStream: 0, findNewestConversation: 0 });
  });

  test("a replay after a restart of a message that continued a branch's first turn is a duplicate there", async () => {
    await editWhileToolWaits();
    const branch = `${CONV}~edit~r4`;
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 5" }) });
    const output = createOutput();
    assert.equal((await sendFifth(output)).routed?.conversationID, branch);
    assert.equal((await output.ended).type, "final");
    const version = (await store.load(branch))?.version;
    const calls = provider.requests.length;
    await runner.shutdown();
    runner = makeRunner();
    const replay = await sendFifth(createOutput());
    assert.equal(replay.type, "duplicate");
    assert.deepEqual(replay.routed, { conversationID: branch, reason: "replay" });
    assert.equal(await store.load(`${CONV}~edit~r5`), null);
    assert.equal((await store.load(branch))?.version, version);
    assert.equal(provider.requests.length, calls); // the turn is not run a second time
  });

  test("a last turn no conversation knows goes to the branch the client is on, not back to X", async () => {
    await runTurn(1, null);
    await runTurn(2, 1);
    // No branch yet: X.
    const phantom = { lastTurnOrigin: "r-phantom", messageID: "m9" };
    assert.deepEqual(await routeOf(phantom), { conversationID: CONV, reason: "unknown_origin" });
    await runTurn(3, 1, "m2");
    const branch = `${CONV}~edit~r3`;
    // E.g. a resume stream's turn the client keeps last (nothing was bound to it), or a turn
    // shown by a blob the client did not send (""): remembered, and after a restart the newest.
    const unreadable = { lastTurnOrigin: "", messageID: "m9" };
    for (const restart of [false, true]) {
      if (restart) {
        await runner.shutdown();
        runner = makeRunner();
      }
      assert.equal(await runner.follow(CONV, phantom, "r8"), branch);
      assert.equal(await runner.follow(CONV, unreadable, "r8"), branch);
    }
    assert.deepEqual(await routeOf(phantom), { conversationID: branch, reason: "unknown_origin" });
    assert.deepEqual(await userTexts(branch), ["message 1", "message 3", "message 9"]);
  });

  /** Routes start 9 (the answer is text) with `hint` and waits for its end. */
  async function routeOf(hint: { lastTurnOrigin: string; messageID: string }) {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 9" }) });
    const output = createOutput();
    const result = await runner.submit(CONV, start(9, "message 9", hint.messageID), output, {
      requestID: `r9-${hint.lastTurnOrigin}-${provider.requests.length}`,
      route: hint,
    });
    assert.equal((await output.ended).type, "final");
    return result.routed;
  }

  test("a replayed rewinding request is no new rewind and leaves the newer branch remembered", async () => {
    await runTurn(1, null);
    await runTurn(2, 1);
    await runTurn(3, 2);
    await runTurn(4, 1, "m2"); // turn 2 edited: branch r4
    const older = `${CONV}~edit~r4`;
    const newer = `${CONV}~edit~r5`;
    const edited = await runTurn(5, 1, "m2"); // edited again, on the branch: branch r5
    assert.equal(edited.routed?.rewind?.from, older);
    assert.equal(edited.routed?.conversationID, newer);
    // Request r4 again (a retry that arrives late).
    const replay = await runner.submit(CONV, start(4, "message 4", "m2"), createOutput(), {
      requestID: "r4",
      route: route(1, "m2"),
    });
    assert.equal(replay.type, "duplicate");
    assert.deepEqual(replay.routed, { conversationID: older, reason: "replay" });
    // Still remembered: the next turn on the newer branch reads nothing more from the store.
    resetReads();
    const next = await runTurn(6, 5);
    assert.deepEqual(next.routed, { conversationID: newer, reason: "last_turn" });
    assert.deepEqual(reads, { load: 0, findRequestStream: 0, findNewestConversation: 0 });
    // After a restart, the older branch is still reached through the binding of its turn.
    await runner.shutdown();
    runner = makeRunner();
    resetReads();
    assert.equal(await runner.follow(CONV, route(4, ""), "r7"), older);
    assert.equal(reads.findRequestStream, 1);
  });
});
