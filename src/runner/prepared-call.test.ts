/**
 * The model call prepared before the commit of the step that plans it (model-call.ts `prepare`,
 * apply-input.ts), against the real LLM layer (a fake provider on 127.0.0.1), the real loop and
 * the memory store: what a step that is not committed, a failover that throws, a call waiting
 * for a slot of its model and a late request leave behind (review-19c).
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, mock, test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import {
  type AdmitCall,
  createLLM,
  createModelConfigs,
  type ExactRequest,
  gateLLM,
  type LLM,
  type LLMStream,
} from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../llm/testing/fake-provider.ts";
import type { StartInput } from "../loop/index.ts";
import { createMemoryStore, type Store } from "../store/index.ts";
import { createRunner } from "./runner.ts";
import type { TurnOutcome, TurnOutput } from "./types.ts";

setFlagsFromString("--expose-gc");
/** A full collection, from a fresh context where `--expose-gc` took effect. */
const collect = runInNewContext("gc") as () => void;

const CONV = "conv-prepared";
/** A prepare wait no machine reaches: these tests check the path where the request is in time. */
const LONG = 60_000;
const AT = 1_767_225_600_000;

interface EndingOutput extends TurnOutput {
  readonly ended: Promise<TurnOutcome>;
  /** Resolves with the first text delta published. */
  readonly firstText: Promise<string>;
}

function createOutput(): EndingOutput {
  let end!: (outcome: TurnOutcome) => void;
  const ended = new Promise<TurnOutcome>((resolve) => {
    end = resolve;
  });
  let text!: (delta: string) => void;
  const firstText = new Promise<string>((resolve) => {
    text = resolve;
  });
  return {
    ended,
    firstText,
    publish(events) {
      for (const event of events) if (event.type === "text_delta") text(event.delta);
    },
    runTool: () => new Promise(() => {}),
    end: (outcome) => end(outcome),
  };
}

function start(fallbacks?: string[]): StartInput {
  return {
    type: "start",
    inputID: "in:hi",
    at: AT,
    userMessage: { role: "user", content: "hi", timestamp: AT },
    context: [],
    settings: {
      model: "main",
      ...(fallbacks === undefined ? {} : { fallbacks }),
      systemPrompt: "You are a test agent.",
      tools: [],
    },
  };
}

const cancel = (inputID: string) =>
  ({ type: "cancel", inputID, at: AT + 1, reason: "stop" }) as const;

/** `store` whose first commit carrying a model call's row loses the compare-and-swap. */
function losingFirstCallCommit(store: Store): { store: Store; conflicts: () => number } {
  let conflicts = 0;
  const proxied: Store = new Proxy(store, {
    get(target, key, receiver) {
      if (key !== "commitInput") return Reflect.get(target, key, receiver);
      return async (commit: Parameters<Store["commitInput"]>[0]) => {
        if (conflicts === 0 && (commit.records ?? []).some((r) => r.type === "llm_call")) {
          conflicts += 1;
          return {
            type: "conflict",
            conversationID: CONV,
            expectedVersion: commit.expectedVersion,
            actualVersion: commit.expectedVersion,
          };
        }
        return target.commitInput(commit);
      };
    },
  });
  return { store: proxied, conflicts: () => conflicts };
}

describe("a model call prepared before its step's commit", () => {
  let provider: FakeProvider;
  let store: Store;
  beforeEach(async () => {
    provider = await startFakeProvider();
    store = createMemoryStore();
  });
  afterEach(async () => {
    mock.timers.reset();
    await provider.close();
    await store.close();
  });

  const createTestLLM = (extra: { maxConcurrent?: number } = {}) =>
    createLLM({
      models: createModelConfigs([
        {
          api: "openai-compatible",
          baseUrl: provider.url,
          apiKey: "sk-test-key",
          name: "main",
          model: "main-up",
          fallbacks: ["spare"],
          ...extra,
        },
        {
          api: "openai-compatible",
          baseUrl: provider.url,
          apiKey: "sk-test-key",
          name: "spare",
          model: "spare-up",
          ...extra,
        },
      ]),
      retry: { sleep: async () => {}, maxAttempts: 1 },
    });

  const savedCall = async (conversationID: string) => {
    const callID = (await store.load(conversationID))?.state.call?.callID ?? "";
    return store.getLLMCall(callID);
  };

  test("a lost compare-and-swap on the planning step: the retry sends one request, the one saved", async () => {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "Hello." }) });
    const losing = losingFirstCallCommit(store);
    const runner = createRunner({ store: losing.store, llm: createTestLLM(), prepareWaitMs: LONG });
    const output = createOutput();
    await runner.submit(CONV, start(), output);
    assert.equal((await output.ended).type, "final");
    await runner.shutdown();
    assert.equal(losing.conflicts(), 1);
    assert.equal(provider.requests.length, 1);
    assert.equal((await savedCall(CONV))?.request, (await provider.request(0)).body);
  });

  test("behind a team gate, a lost compare-and-swap gives the dropped call's reservation back before the retry asks", async () => {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "Hello." }) });
    // Room for one reservation, as a user close to the budget.
    let outstanding = 0;
    const log: string[] = [];
    const admit: AdmitCall = async () => {
      if (outstanding >= 1) {
        log.push("refused");
        return { type: "refused", kind: "budget", message: "one call at a time" };
      }
      outstanding += 1;
      log.push("admitted");
      return {
        type: "admitted",
        settle: async () => {
          outstanding -= 1;
          log.push("settled");
        },
      };
    };
    const losing = losingFirstCallCommit(store);
    const runner = createRunner({
      store: losing.store,
      llm: gateLLM(createTestLLM(), admit),
      prepareWaitMs: LONG,
    });
    const output = createOutput();
    await runner.submit(CONV, start(), output);
    const outcome = await output.ended;
    await runner.shutdown();
    assert.equal(losing.conflicts(), 1);
    assert.deepEqual(log, ["admitted", "settled", "admitted", "settled"]);
    assert.equal(outcome.type, "final");
    assert.equal(provider.requests.length, 1);
  });

  test("a prepared failover call is dropped when telling the model switch throws", async () => {
    provider.reply(
      { type: "status", status: 500, body: '{"error":{"message":"boom"}}' },
      { type: "sse", body: toChatCompletionSse({ text: "spare answers" }) },
    );
    const streams: LLMStream[] = [];
    const inner = createTestLLM();
    const llm: LLM = {
      ...inner,
      stream: (call) => {
        const stream = inner.stream(call);
        streams.push(stream);
        return stream;
      },
    };
    let reported!: (error: unknown) => void;
    const error = new Promise<unknown>((resolve) => {
      reported = resolve;
    });
    const runner = createRunner({
      store,
      llm,
      prepareWaitMs: LONG,
      onModelSwitch: () => {
        throw new Error("the logger failed");
      },
      onError: (e) => reported(e),
    });
    await runner.submit(CONV, start(["spare"]), createOutput());
    assert.match(String(await error), /the logger failed/);
    assert.equal(streams.length, 2);
    const spare = streams[1] as LLMStream;
    assert.equal(spare.signal.aborted, true, "the held call was dropped");
    // It ends, its slot released (`drop` reads it to its end).
    assert.equal(await spare.recv(), undefined);
    await runner.shutdown();
    assert.equal(provider.requests.length, 1, "the spare was never sent");
  });

  test("a call waiting for a slot of its model does not hold the step that plans it, and a cancel meanwhile sends nothing", async () => {
    provider.reply({ type: "hang" });
    let saves = 0;
    const counted: Store = new Proxy(store, {
      get(target, key, receiver) {
        if (key !== "saveLLMCall") return Reflect.get(target, key, receiver);
        return (call: Parameters<Store["saveLLMCall"]>[0]) => {
          saves += 1;
          return target.saveLLMCall(call);
        };
      },
    });
    const runner = createRunner({ store: counted, llm: createTestLLM({ maxConcurrent: 1 }) });
    const first = createOutput();
    await runner.submit("conv-a", start(), first);
    await provider.request(0);
    // No timer fires from here on: the step must not wait for one (PREPARE_WAIT_MS).
    const realTimeout = globalThis.setTimeout;
    mock.timers.enable({ apis: ["setTimeout"] });
    const second = createOutput();
    const submitted = runner.submit("conv-b", start(), second);
    const guard = new Promise<"held">((resolve) => realTimeout(() => resolve("held"), 5_000));
    const outcome = await Promise.race([submitted.then(() => "submitted" as const), guard]);
    mock.timers.reset();
    assert.equal(outcome, "submitted", "the step went on without the queued call's request");
    assert.equal((await store.load("conv-b"))?.state.status, "waiting_llm");
    await runner.submit("conv-b", cancel("c"), second);
    assert.equal((await second.ended).type, "canceled");
    await runner.shutdown();
    assert.equal(provider.requests.length, 1, "only the first conversation's call was sent");
    assert.equal(await savedCall("conv-b"), null, "no row for a call never sent");
    assert.equal(saves, 0);
  });

  for (const gated of [false, true]) {
    test(`${gated ? "behind a team gate, " : ""}a call mid-stream keeps neither the caller's call, its hooks, its prepared call nor its first event`, async () => {
      const sse = toChatCompletionSse({ text: "one two three four five" });
      provider.reply({ type: "stall", body: sse, events: 3 });
      // The gate's admission holds nothing of the call either (store/users.ts keeps amounts).
      const admit: AdmitCall = async () => ({ type: "admitted", settle: async () => {} });
      const inner = gated ? gateLLM(createTestLLM(), admit) : createTestLLM();
      const kept: Record<string, WeakRef<object>> = {};
      let first!: (stream: LLMStream) => void;
      const opened = new Promise<LLMStream>((resolve) => {
        first = resolve;
      });
      const llm: LLM = {
        ...inner,
        stream: (call) => {
          kept.call = new WeakRef(call);
          if (call.beforeSend !== undefined) kept.beforeSend = new WeakRef(call.beforeSend);
          if (call.onQueued !== undefined) kept.onQueued = new WeakRef(call.onQueued);
          const stream = inner.stream(call);
          first(stream);
          return stream;
        },
      };
      const runner = createRunner({ store, llm, prepareWaitMs: LONG });
      const output = createOutput();
      const publish = output.publish.bind(output);
      const watched: EndingOutput = {
        ...output,
        publish(events, state) {
          for (const event of events) if (event.type === "start") kept.start = new WeakRef(event);
          publish(events, state);
        },
      };
      await runner.submit(CONV, start(), watched);
      await output.firstText;
      const stream = await opened;
      assert.equal(Object.keys(kept).length, 4, "the call, its beforeSend and onQueued, its start");
      // WeakRef targets live to the end of the job that created or read them.
      await new Promise((resolve) => setImmediate(resolve));
      collect();
      assert.deepEqual(
        Object.entries(kept)
          .filter(([, ref]) => ref.deref() !== undefined)
          .map(([name]) => name),
        [],
        "nothing of the caller's call is kept while the model answers",
      );
      assert.equal(stream.signal.aborted, false, "still streaming");
      await runner.submit(CONV, cancel("c"), watched);
      await output.ended;
      await runner.shutdown();
    });
  }

  test("a call that waited for a slot keeps no request body once it is sent", async () => {
    const sse = toChatCompletionSse({ text: "one two three" });
    provider.reply({ type: "hang" }, { type: "stall", body: sse, events: 2 });
    const inner = createTestLLM({ maxConcurrent: 1 });
    let sentRequest: WeakRef<ExactRequest> | undefined;
    const llm: LLM = {
      ...inner,
      stream: (call) =>
        inner.stream({
          ...call,
          beforeSend: async (exact) => {
            if (call.conversationID === "conv-b") sentRequest = new WeakRef(exact);
            await call.beforeSend?.(exact);
          },
        }),
    };
    const runner = createRunner({ store, llm });
    const first = createOutput();
    await runner.submit("conv-a", start(), first);
    await provider.request(0);
    const second = createOutput();
    await runner.submit("conv-b", start(), second);
    // The first call ends: the slot goes to the second, which saves its row and is sent.
    await runner.submit("conv-a", cancel("c"), first);
    // Answering: the response arrived, the send is over.
    await second.firstText;
    const row = await savedCall("conv-b");
    assert.equal(row?.request, (await provider.request(1)).body, "saved by its own write");
    assert.equal(row?.turnID, (await store.load("conv-b"))?.state.turnID);
    // WeakRef targets live to the end of the job that created or read them.
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    assert.equal(
      sentRequest?.deref(),
      undefined,
      "the request is not kept while the model answers",
    );
    await runner.shutdown();
  });
});
