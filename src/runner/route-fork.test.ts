/**
 * Forks through the real runner, loop and store and the LLM layer against a fake provider on
 * 127.0.0.1 (route-start.ts `fork`, loop/fork.ts): a start on a new conversation whose client shows
 * a turn another conversation ran begins with a copy of that conversation up to that turn; a new
 * chat reads nothing more from the store; a replay is a duplicate, also after a restart, and a
 * restart between the copy and the start's commit makes no second copy; a conversation the
 * request may not see is never copied.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";
import { createLLM, createModelConfigs, toPromptCacheKey } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../llm/testing/fake-provider.ts";
import type { StartInput, ToolResultMessage } from "../loop/index.ts";
import { createMemoryStore, type Store } from "../store/index.ts";
import { createRunner } from "./runner.ts";
import type { Runner, TurnOutcome, TurnOutput } from "./types.ts";

const SOURCE = "conv-source";
const FORK = "conv-fork";
const READ = {
  name: "read",
  description: "Read a file.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

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

/** Turn start `r<n>` with message `m<n>`, as the Cursor dialect builds it. */
function start(n: number): StartInput {
  return {
    type: "start",
    inputID: `r${n}:0`,
    at: 1_767_225_600_000,
    userMessage: { role: "user", content: `message ${n}`, timestamp: 1_767_225_600_000 },
    context: [],
    settings: { model: "scripted", systemPrompt: "You are a test agent.", tools: [READ] },
    origin: `r${n}`,
    messageID: `m${n}`,
  };
}

const route = (last: number | null) => ({
  lastTurnOrigin: last === null ? null : `r${last}`,
  messageID: "",
});

interface UserTexts {
  readonly messages: readonly { readonly role: string; readonly content: unknown }[];
}

/** The texts of the user and assistant messages of a provider request. */
function textsOf(body: string): string[] {
  return (JSON.parse(body) as UserTexts).messages
    .filter((message) => message.role === "user" || message.role === "assistant")
    .map((message) =>
      typeof message.content === "string" ? message.content : JSON.stringify(message.content),
    );
}

describe("routing a start on a new conversation that shows turns (a fork)", () => {
  let provider: FakeProvider;
  let store: Store;
  let runner: Runner;
  let visible: (conversationID: string) => boolean;
  let asked: string[];
  /** Fails the commit of this input id once (a crash between the copy and the start). */
  let failOnce: string | null;
  /** The provider API of the runner's model ("openai-chat" sends `prompt_cache_key`). */
  let api: "openai-compatible" | "openai-chat";
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
    visible = () => true;
    asked = [];
    failOnce = null;
    api = "openai-compatible";
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
      commitInput: (commit) => {
        if (commit.inputID === failOnce) {
          failOnce = null;
          return Promise.reject(new Error("the process died"));
        }
        return real.commitInput(commit);
      },
    } as Store;
    runner = makeRunner();
  });
  const makeRunner = (on: Store = store) =>
    createRunner({
      store: on,
      llm: createLLM({
        models: createModelConfigs([
          {
            name: "scripted",
            api,
            model: "scripted-model",
            baseUrl: provider.url,
            apiKey: "sk-test-key",
          },
        ]),
      }),
      prepareWaitMs: 60_000,
      mayCopy: (conversationID) => {
        asked.push(conversationID);
        return Promise.resolve(visible(conversationID));
      },
    });
  afterEach(async () => {
    await runner.shutdown();
    await provider.close();
    await store.close();
  });

  /** Runs turn `n` on `conversationID` (the client showing `last`) to its answer. */
  async function runTurn(
    conversationID: string,
    n: number,
    last: number | null,
    on: Runner = runner,
  ) {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: `answer ${n}` }) });
    const output = createOutput();
    const result = await on.submit(conversationID, start(n), output, {
      requestID: `r${n}`,
      route: route(last),
    });
    assert.equal((await output.ended).type, "final");
    return { result, body: provider.requests.at(-1)?.body ?? "" };
  }

  const sourceTurns = async (count: number) => {
    for (let n = 1; n <= count; n++) await runTurn(SOURCE, n, n === 1 ? null : n - 1);
  };

  test("a new chat without turns shown reads nothing more than its own state", async () => {
    resetReads();
    const { result } = await runTurn(FORK, 1, null);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: FORK,
      reason: "no_turns",
    });
    assert.deepEqual(reads, { load: 1, findRequestStream: 0, findNewestConversation: 0 });
    assert.deepEqual(asked, []);
  });

  test("a fork at turn 2 of 3 copies turns 1-2; the new message runs on them; a replay is a duplicate", async () => {
    await sourceTurns(3);
    const source = await store.load(SOURCE);
    resetReads();
    const { result, body } = await runTurn(FORK, 4, 2);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: FORK,
      fork: { from: SOURCE, afterTurn: 2, messages: 4 },
    });
    assert.deepEqual(textsOf(body), [
      "message 1",
      "answer 1",
      "message 2",
      "answer 2",
      "message 4",
    ]);
    // The fork path's reads: the new conversation, the binding, the source (cached here, idle:
    // read again, another instance may have run its later turns).
    assert.deepEqual(reads, { load: 2, findRequestStream: 1, findNewestConversation: 0 });
    assert.deepEqual(asked, [SOURCE]);
    const forked = await store.load(FORK);
    assert.equal(forked?.state.turnCount, 3);
    assert.deepEqual(
      forked?.state.messages.slice(0, 4),
      source?.state.messages.slice(0, 4),
      "the copy is the source's history as it was",
    );
    // The source is untouched.
    assert.equal((await store.load(SOURCE))?.version, source?.version);
    // The same request again: a duplicate, no second copy, no model call.
    const calls = provider.requests.length;
    const replay = await runner.submit(FORK, start(4), createOutput(), {
      requestID: "r4",
      route: route(2),
    });
    assert.equal(replay.type, "duplicate");
    assert.equal((await store.load(FORK))?.version, forked?.version);
    // After a restart too.
    await runner.shutdown();
    runner = makeRunner();
    const again = await runner.submit(FORK, start(4), createOutput(), {
      requestID: "r4",
      route: route(2),
    });
    assert.equal(again.type, "duplicate");
    assert.equal((await store.load(FORK))?.version, forked?.version);
    assert.equal(provider.requests.length, calls);
    // The fork's next turn continues it, reading nothing more.
    resetReads();
    const next = await runTurn(FORK, 5, 4);
    assert.deepEqual(next.result.routed, { conversationID: FORK, reason: "last_turn" });
    assert.equal(textsOf(next.body).length, 7);
    assert.deepEqual(reads, { load: 0, findRequestStream: 0, findNewestConversation: 0 });
  });

  test("two instances: the source's last turn ran on the other one; the fork still copies it", async () => {
    // This instance holds the source (idle) after turns 1-2; turn 3 runs on another instance on
    // the same store, so the cached source here knows nothing of r3 (review-fork #1).
    await sourceTurns(2);
    const other = makeRunner();
    try {
      await runTurn(SOURCE, 3, 2, other);
      resetReads();
      const { result, body } = await runTurn(FORK, 4, 3);
      assert.deepEqual(result.type === "applied" && result.routed, {
        conversationID: FORK,
        fork: { from: SOURCE, afterTurn: 3, messages: 6 },
      });
      assert.deepEqual(
        textsOf(body).filter((text) => text.startsWith("message")),
        ["message 1", "message 2", "message 3", "message 4"],
      );
      // The new conversation, the binding, and the source read again (idle here).
      assert.deepEqual(reads, { load: 2, findRequestStream: 1, findNewestConversation: 0 });
    } finally {
      await other.shutdown();
    }
  });

  test("the same first request on two instances at once: one copy, one start, the copy reported once", async () => {
    await sourceTurns(2);
    // Instance A commits the copy and stops there; B gets the same request meanwhile.
    let copied!: () => void;
    const copiedOnA = new Promise<void>((resolve) => {
      copied = resolve;
    });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const gated: Store = {
      ...store,
      commitInput: async (commit) => {
        const result = await store.commitInput(commit);
        if (commit.inputID === "r3:fork") {
          copied();
          await gate;
        }
        return result;
      },
    };
    const a = makeRunner(gated);
    try {
      const onA = a.submit(FORK, start(3), createOutput(), { requestID: "r3", route: route(2) });
      await copiedOnA;
      // B finds the copy and runs the start on it.
      const onB = await runTurn(FORK, 3, 2);
      assert.deepEqual(onB.result.routed, { conversationID: FORK, reason: "last_turn" });
      open();
      // A's start is the duplicate, but A made the copy: it reports it (logged "fork applied").
      const resultA = await onA;
      assert.equal(resultA.type, "duplicate");
      assert.deepEqual(resultA.routed, {
        conversationID: FORK,
        fork: { from: SOURCE, afterTurn: 2, messages: 4 },
      });
      const forked = await store.load(FORK);
      assert.deepEqual([forked?.state.turnCount, forked?.state.messages.length], [3, 6]);
    } finally {
      open();
      await a.shutdown();
    }
  });

  test("a restart between the copy and the start: the replay runs on the copy, no second copy", async () => {
    await sourceTurns(2);
    failOnce = "r3:0";
    await assert.rejects(
      runner.submit(FORK, start(3), createOutput(), { requestID: "r3", route: route(2) }),
      /the process died/,
    );
    const copied = await store.load(FORK);
    assert.equal(copied?.state.turnCount, 2, "the copy was committed");
    await runner.shutdown();
    runner = makeRunner();
    const { result, body } = await runTurn(FORK, 3, 2);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: FORK,
      reason: "last_turn",
    });
    assert.deepEqual(
      textsOf(body).filter((text) => text.startsWith("message")),
      ["message 1", "message 2", "message 3"],
    );
    assert.equal((await store.load(FORK))?.state.turnCount, 3);
  });

  test("a fork of a conversation the request may not see copies nothing", async () => {
    await sourceTurns(2);
    visible = (conversationID) => conversationID !== SOURCE;
    const { result, body } = await runTurn(FORK, 3, 2);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: FORK,
      noFork: "not_visible",
    });
    assert.deepEqual(textsOf(body), ["message 3"]);
    assert.deepEqual(asked, [SOURCE]);
  });

  test("a fork showing the source's running turn copies up to the turn before it", async () => {
    await sourceTurns(1);
    provider.reply({
      type: "sse",
      body: toChatCompletionSse({
        toolCalls: [{ id: "call_1", name: "read", arguments: { path: "a.ts" } }],
      }),
    });
    const running = createOutput();
    await runner.submit(SOURCE, start(2), running, { requestID: "r2", route: route(1) });
    await running.toolAsked;
    const { result, body } = await runTurn(FORK, 3, 2);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: FORK,
      fork: { from: SOURCE, afterTurn: 1, messages: 2 },
    });
    assert.deepEqual(
      textsOf(body).filter((text) => text.startsWith("message")),
      ["message 1", "message 3"],
    );
    // The source's turn goes on: a fork does not cancel it.
    assert.equal((await store.load(SOURCE))?.state.status, "waiting_client");
  });

  test("a fork, a fork of it and a rewind's branch send the source's prompt-cache key", async () => {
    api = "openai-chat";
    await runner.shutdown();
    runner = makeRunner();
    const keyOf = (body: string) =>
      (JSON.parse(body) as { prompt_cache_key?: string }).prompt_cache_key;
    await sourceTurns(2);
    const sourceKey = keyOf(provider.requests.at(-1)?.body ?? "");
    // A conversation that is no copy keeps the key it always had.
    assert.equal(sourceKey, toPromptCacheKey(SOURCE));
    const fork = await runTurn(FORK, 3, 2);
    // The fork's key is kept with its state: the same after a restart.
    await runner.shutdown();
    runner = makeRunner();
    const forkAgain = await runTurn(FORK, 4, 3);
    const forkOfFork = await runTurn("conv-fork-2", 5, 4);
    // Turn 2's message edited on the source: a branch to turn 1.
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 6" }) });
    const output = createOutput();
    const edited = await runner.submit(SOURCE, { ...start(6), messageID: "m2" }, output, {
      requestID: "r6",
      route: { lastTurnOrigin: "r1", messageID: "m2" },
    });
    await output.ended;
    assert.equal(edited.routed?.conversationID, `${SOURCE}~edit~r6`);
    const branch = provider.requests.at(-1)?.body ?? "";
    const fresh = await runTurn("conv-new", 7, null);
    assert.deepEqual([fork.body, forkAgain.body, forkOfFork.body, branch].map(keyOf), [
      sourceKey,
      sourceKey,
      sourceKey,
      sourceKey,
    ]);
    assert.equal(keyOf(fresh.body), toPromptCacheKey("conv-new"));
  });

  test("a fork at a turn a resume request took over copies it (the binding names the turn)", async () => {
    await sourceTurns(1);
    provider.reply({
      type: "sse",
      body: toChatCompletionSse({
        toolCalls: [{ id: "call_1", name: "read", arguments: { path: "a.ts" } }],
      }),
    });
    // Turn 2 waits for its tool call; the window reloads: its stream is gone (detached) and a
    // resume request q2 takes the turn over, answers the call and sees the turn end.
    let asked!: () => void;
    const toolAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    let fail!: (error: Error) => void;
    const first: TurnOutput = {
      publish() {},
      runTool() {
        asked();
        return new Promise<ToolResultMessage>((_, reject) => {
          fail = reject;
        });
      },
      end() {},
      isDetached: () => true,
      release: (reason) => fail(new Error(reason)),
    };
    await runner.submit(SOURCE, start(2), first, { requestID: "r2", route: route(1) });
    await toolAsked;
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 2" }) });
    let ended!: (outcome: TurnOutcome) => void;
    const resumedEnd = new Promise<TurnOutcome>((resolve) => {
      ended = resolve;
    });
    const resumed: TurnOutput = {
      publish() {},
      runTool: (command) =>
        Promise.resolve({
          role: "toolResult",
          toolCallId: command.toolCall.id,
          toolName: command.toolCall.name,
          content: [{ type: "text", text: "a.ts adds" }],
          isError: false,
          timestamp: 1,
        }),
      end: (outcome) => ended(outcome),
    };
    assert.equal(await runner.resume(SOURCE, resumed, { requestID: "q2" }), true);
    assert.equal((await resumedEnd).type, "final");
    // The duplicated chat's checkpoint names turn 2 by q2, which the source's records lack.
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 3" }) });
    const output = createOutput();
    const result = await runner.submit(FORK, start(3), output, {
      requestID: "r3",
      route: { lastTurnOrigin: "q2", messageID: "" },
    });
    await output.ended;
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: FORK,
      fork: { from: SOURCE, afterTurn: 2, messages: 6 },
    });
    assert.deepEqual(
      textsOf(provider.requests.at(-1)?.body ?? "").filter((text) => text.startsWith("message")),
      ["message 1", "message 2", "message 3"],
    );
  });

  test("a fork from a branch (an edited message) copies the branch", async () => {
    await sourceTurns(3);
    // Turn 2's message edited: a branch of the source to turn 1, whose turn runs as r4.
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 4" }) });
    const output = createOutput();
    const edited = await runner.submit(SOURCE, { ...start(4), messageID: "m2" }, output, {
      requestID: "r4",
      route: { lastTurnOrigin: "r1", messageID: "m2" },
    });
    await output.ended;
    const branch = `${SOURCE}~edit~r4`;
    assert.equal(edited.routed?.conversationID, branch);
    const { result, body } = await runTurn(FORK, 5, 4);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: FORK,
      fork: { from: branch, afterTurn: 2, messages: 4 },
    });
    assert.deepEqual(
      textsOf(body).filter((text) => text.startsWith("message")),
      ["message 1", "message 4", "message 5"],
    );
    assert.deepEqual(asked, [branch]);
  });

  test("a fork of a fork, at the fork's own turn, copies the fork", async () => {
    await sourceTurns(2);
    await runTurn(FORK, 3, 2);
    const { result, body } = await runTurn("conv-fork-2", 4, 3);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: "conv-fork-2",
      fork: { from: FORK, afterTurn: 3, messages: 6 },
    });
    assert.deepEqual(
      textsOf(body).filter((text) => text.startsWith("message")),
      ["message 1", "message 2", "message 3", "message 4"],
    );
  });

  test("the client's turns are read only when no conversation here ran its last turn, and then imported", async () => {
    let reads = 0;
    const imported = () => {
      reads += 1;
      return [
        {
          origin: "c1",
          messages: [{ role: "user" as const, content: "from elsewhere", timestamp: 1 }],
        },
      ];
    };
    // A new chat, a fork of a known conversation: never read.
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 1" }) });
    let output = createOutput();
    await runner.submit(SOURCE, start(1), output, {
      requestID: "r1",
      route: { ...route(null), imported },
    });
    await output.ended;
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 2" }) });
    output = createOutput();
    const forked = await runner.submit(FORK, start(2), output, {
      requestID: "r2",
      route: { ...route(1), imported },
    });
    await output.ended;
    assert.equal(forked.routed?.fork?.from, SOURCE);
    assert.equal(reads, 0);
    // Unknown: read once, imported; a replay finds the history and reads nothing.
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "answer 3" }) });
    output = createOutput();
    const route3 = { lastTurnOrigin: "c1", messageID: "", imported };
    const result = await runner.submit("conv-import", start(3), output, {
      requestID: "r3",
      route: route3,
    });
    await output.ended;
    assert.deepEqual(result.routed, {
      conversationID: "conv-import",
      imported: { turns: 1, messages: 1 },
    });
    // The imported turn has no answer: an OpenAI-compatible server gets the stand-in reply
    // between the two user messages (src/llm/README.md "Empty messages and turns without a reply").
    assert.deepEqual(textsOf(provider.requests.at(-1)?.body ?? ""), [
      "from elsewhere",
      "(no reply: the turn ended before an answer)",
      "message 3",
    ]);
    const replay = await runner.submit("conv-import", start(3), createOutput(), {
      requestID: "r3",
      route: route3,
    });
    assert.equal(replay.type, "duplicate");
    assert.equal(reads, 1);
  });

  test("a last turn no conversation here ran: nothing copied, logged as unknown", async () => {
    const { result, body } = await runTurn(FORK, 1, 7);
    assert.deepEqual(result.type === "applied" && result.routed, {
      conversationID: FORK,
      noFork: "unknown_source",
    });
    assert.deepEqual(textsOf(body), ["message 1"]);
  });
});
