/**
 * `createModelCall` on its own, against the real LLM layer (a fake provider on 127.0.0.1) and the
 * memory store: what a prepared call that could not be saved in its step's commit saves itself, and
 * how the call's events are applied against the conversation's queue.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";
import {
  createLLM,
  createModelConfigs,
  type LLM,
  type LLMStream,
  type ResponseEvent,
} from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../llm/testing/fake-provider.ts";
import {
  type CallLLMCommand,
  createConversation,
  type Input,
  type RuntimeState,
  type Transition,
} from "../loop/index.ts";
import { createMemoryStore, type Store } from "../store/index.ts";
import type { Live } from "./conversation-cache.ts";
import { createModelCall } from "./model-call.ts";
import { createSerialQueue, type SerialQueue } from "./serial-queue.ts";

const AT = 1_767_225_600_000;

describe("createModelCall()", () => {
  let provider: FakeProvider;
  let store: Store;
  beforeEach(async () => {
    provider = await startFakeProvider();
    store = createMemoryStore();
  });
  afterEach(async () => {
    await provider.close();
    await store.close();
  });

  test("a prepared call saving its own row takes the turn of the step that planned it, not the turn at its send", async () => {
    provider.reply({ type: "hang" }, { type: "sse", body: toChatCompletionSse({ text: "Hi." }) });
    const llm = createLLM({
      models: createModelConfigs([
        {
          api: "openai-compatible",
          baseUrl: provider.url,
          apiKey: "sk-test-key",
          name: "main",
          model: "main-up",
          maxConcurrent: 1,
        },
      ]),
    });
    const request = {
      systemPrompt: "You are a test agent.",
      messages: [{ role: "user" as const, content: "hi", timestamp: AT }],
      tools: [],
    };
    // Another call holds the model's only slot: the prepared one waits for it (late path).
    const holder = llm.stream({
      callID: "call-holder",
      model: "main",
      request,
      conversationID: "c",
    });
    const holding = holder.recv();
    await provider.request(0);
    // What the call reads of the conversation when it is let go: another turn's id.
    const { command, entry } = await toCallInFlight(store, { request, turnID: "turn-later" });
    const modelCall = createModelCall({
      store,
      llm,
      now: () => AT,
      queue: createSerialQueue(),
      apply: Object.assign(async () => null, { now: () => undefined }),
      isStopping: () => false,
    });
    const prepared = await modelCall.prepare(entry, command, "turn-of-the-step");
    assert.ok(prepared !== null);
    assert.equal(prepared.exact, null, "not known before the step's commit: saved by the call");
    const reading = modelCall(entry, command, prepared);
    holder.abort("done");
    await holding;
    await reading;
    assert.equal((await store.getLLMCall("call-1"))?.turnID, "turn-of-the-step");
    assert.equal(provider.requests.length, 2);
  });

  test("events that arrive while the conversation's queue is busy wait behind it, in order", async () => {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "abcdefgh", chunkSize: 2 }) });
    const real = createLLM({
      models: createModelConfigs([
        { api: "openai-compatible", baseUrl: provider.url, apiKey: "k", name: "main", model: "m" },
      ]),
    });
    // The call's events are all read before the reader gets the first: they wait in its queue.
    let arrived!: Promise<void>;
    const llm: Pick<LLM, "stream"> = {
      stream: (call) => {
        const inner = real.stream(call);
        const events: ResponseEvent[] = [];
        let all = false;
        arrived = (async () => {
          for (let e = await inner.recv(); e !== undefined; e = await inner.recv()) events.push(e);
          all = true;
        })();
        return Object.assign(Object.create(inner) as LLMStream, {
          recv: async () => {
            await arrived;
            return events.shift();
          },
          poll: () => (all ? events.shift() : undefined),
        });
      },
    };
    const { command, entry } = await toCallInFlight(store);
    const queue = createSerialQueue();
    // Tells when the reader puts a step in the queue.
    let enqueued!: () => void;
    const inQueue = new Promise<void>((resolve) => {
      enqueued = resolve;
    });
    const spied: SerialQueue = {
      run: (key, task) => {
        enqueued();
        return queue.run(key, task);
      },
      idle: (key) => queue.idle(key),
      get size() {
        return queue.size;
      },
    };
    const log: string[] = [];
    let holding = true;
    const applied = (how: string, input: Input): Transition => {
      assert.equal(holding, false, "nothing is applied while another task holds the queue");
      const event = (input as Extract<Input, { type: "llm_event" }>).event;
      log.push(`${how}:${event.type === "text_delta" ? event.delta : event.type}`);
      const ends = event.type === "done" || event.type === "error";
      const next = ends ? ({ type: "wait_input" } as const) : ({ type: "continue_llm" } as const);
      return { state: entry.state, emit: [], command: next, rejected: null };
    };
    const apply = Object.assign(async (_: Live, input: Input) => applied("queued", input), {
      // A delta continues the call (nothing to commit); `done` is committed, in the queue.
      now: (_: Live, input: Input) =>
        input.type === "llm_event" && input.event.type === "done"
          ? undefined
          : applied("now", input),
    });
    const modelCall = createModelCall({
      store,
      llm,
      now: () => AT,
      queue: spied,
      apply,
      isStopping: () => false,
    });
    // Another input of the conversation holds the queue until the reader queued a step behind it.
    let release!: () => void;
    const held = queue.run("c", () => new Promise<void>((resolve) => (release = resolve)));
    const reading = modelCall(entry, command);
    await Promise.race([inQueue, reading]);
    await arrived;
    holding = false;
    release();
    await held;
    await reading;
    // The queue's step that waited takes the events behind the first: deltas applied at once in
    // it, `done` committed.
    assert.deepEqual(log, [
      "now:start",
      "now:text_start",
      "now:ab",
      "now:cd",
      "now:ef",
      "now:gh",
      "now:text_end",
      "queued:done",
    ]);
  });

  test("a step that commits waits for the event loop's check phase: what the deltas before it queued there (a client's write) runs first", async () => {
    // The whole reply, its end included, in one network read: its events are applied in one
    // chain of promise jobs, up to the step that commits.
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "abcd", chunkSize: 2 }) });
    const log: string[] = [];
    let writing = false;
    await readReply(provider, store, (how, event) => {
      if (event.type === "text_delta") {
        log.push(`${how}:${event.delta}`);
        // As a client's stream does: the delta goes out from an immediate.
        if (!writing) {
          writing = true;
          setImmediate(() => {
            writing = false;
            log.push("written");
          });
        }
      } else if (event.type === "done") {
        log.push(`${how}:done`);
      }
    });
    assert.deepEqual(log, ["now:ab", "now:cd", "written", "queued:done"]);
  });

  test("a call stopped while its committing step waits for the check phase applies nothing more", async () => {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "abcd", chunkSize: 2 }) });
    const log: string[] = [];
    let stopping = false;
    await readReply(
      provider,
      store,
      (how, event) => {
        log.push(`${how}:${event.type}`);
        // The server starts to stop in the check phase the committing step waits for.
        if (event.type === "text_end") setImmediate(() => (stopping = true));
      },
      () => stopping,
    );
    assert.equal(log.at(-1), "now:text_end");
    assert.ok(!log.includes("queued:done"));
  });
});

/**
 * Reads the fake provider's reply as the model call of a conversation of `store`, telling
 * `onEvent` of each event applied: at once (`now`), or in the queue (`queued`, `done`: its step
 * commits).
 */
async function readReply(
  provider: FakeProvider,
  store: Store,
  onEvent: (how: "now" | "queued", event: ResponseEvent) => void,
  isStopping: () => boolean = () => false,
): Promise<void> {
  const llm = createLLM({
    models: createModelConfigs([
      { api: "openai-compatible", baseUrl: provider.url, apiKey: "k", name: "main", model: "m" },
    ]),
  });
  const { command, entry } = await toCallInFlight(store);
  const applied = (how: "now" | "queued", input: Input): Transition => {
    const event = (input as Extract<Input, { type: "llm_event" }>).event;
    onEvent(how, event);
    const ends = event.type === "done" || event.type === "error";
    const next = ends ? ({ type: "wait_input" } as const) : ({ type: "continue_llm" } as const);
    return { state: entry.state, emit: [], command: next, rejected: null };
  };
  const apply = Object.assign(async (_: Live, input: Input) => applied("queued", input), {
    now: (_: Live, input: Input) =>
      input.type === "llm_event" && input.event.type === "done" ? undefined : applied("now", input),
  });
  const modelCall = createModelCall({
    store,
    llm,
    now: () => AT,
    queue: createSerialQueue(),
    apply,
    isStopping,
  });
  await modelCall(entry, command);
}

/**
 * A conversation of the memory store `store` whose turn (`turnID`, default `turn-1`) waits for
 * the model call `call-1` (of `request`, default a first turn's).
 */
async function toCallInFlight(
  store: Store,
  options: { readonly request?: CallLLMCommand["request"]; readonly turnID?: string } = {},
): Promise<{ command: CallLLMCommand; entry: Live }> {
  const command: CallLLMCommand = {
    type: "call_llm",
    callID: "call-1",
    model: "main",
    request: options.request ?? {
      systemPrompt: "You are a test agent.",
      messages: [{ role: "user" as const, content: "hi", timestamp: AT }],
      tools: [],
    },
    messagesHash: "h",
    messageCount: 1,
    lastMessageHash: "h",
  };
  const created = createConversation("c");
  await store.commitInput({
    inputID: "in:create",
    expectedVersion: 0,
    state: created.committed,
    result: { command: "none", rejected: null },
  });
  const entry: Live = {
    conversationID: "c",
    state: {
      ...created,
      committed: {
        ...created.committed,
        status: "waiting_llm",
        turnID: options.turnID ?? "turn-1",
        call: { callID: "call-1" } as RuntimeState["committed"]["call"],
      },
    },
    version: 1,
    output: null,
    calling: null,
    stream: null,
    tools: new Map(),
    retired: false,
  };
  return { command, entry };
}
