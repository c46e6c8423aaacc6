/**
 * The runner against the real LLM layer (a fake OpenAI-compatible provider on 127.0.0.1), the
 * real loop and a real store: commit order, tool round trips, cancels, supersede, duplicates and
 * resuming after a stop.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";
import { createLLM, createModelConfigs } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../llm/testing/fake-provider.ts";
import {
  type CallClientCommand,
  type ResponseEvent,
  type StartInput,
  type ToolResultMessage,
  toTurnRecord,
} from "../loop/index.ts";
import {
  createMemoryStore,
  type OperationAttempt,
  openSqliteStore,
  type Store,
} from "../store/index.ts";
import { createRunner } from "./runner.ts";
import type { Runner, TurnOutcome, TurnOutput } from "./types.ts";

const CONV = "conv-runner";
const READ = {
  name: "read",
  description: "Read a file.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};

interface RecordingOutput extends TurnOutput {
  readonly events: ResponseEvent[];
  readonly tools: {
    command: CallClientCommand;
    attempt: OperationAttempt;
    answer: (result: string) => void;
    fail: (e: Error) => void;
  }[];
  readonly ended: Promise<TurnOutcome>;
  /** Whether `end` was called. */
  hasEnded: boolean;
  /** `isDetached()`: nobody reads this output. */
  detached: boolean;
  /** The reasons `release` was called with (it fails the tool waits, as the transport does). */
  readonly released: string[];
  /**
   * Each `resumed`: the turn's client id (its record's origin), how many tools were asked by
   * then, and the output it was taken over from (a takeover).
   */
  readonly resumedAs: {
    origin: string | undefined;
    toolsAsked: number;
    from?: TurnOutput;
  }[];
  nextTool(): Promise<RecordingOutput["tools"][number]>;
}

function createOutput(): RecordingOutput {
  let endTurn!: (outcome: TurnOutcome) => void;
  const ended = new Promise<TurnOutcome>((resolve) => {
    endTurn = resolve;
  });
  const tools: RecordingOutput["tools"] = [];
  const waiting: ((tool: RecordingOutput["tools"][number]) => void)[] = [];
  let taken = 0;
  const output: RecordingOutput = {
    events: [],
    tools,
    ended,
    hasEnded: false,
    detached: false,
    released: [],
    resumedAs: [],
    resumed(state, from) {
      output.resumedAs.push({
        origin: toTurnRecord(state)?.origin,
        toolsAsked: tools.length,
        ...(from === undefined ? {} : { from }),
      });
    },
    publish(events) {
      output.events.push(...events);
    },
    isDetached: () => output.detached,
    release(reason) {
      output.released.push(reason);
      for (const tool of tools) tool.fail(new Error(reason));
    },
    runTool(command, _state, attempt) {
      return new Promise<ToolResultMessage>((resolve, reject) => {
        const tool = {
          command,
          attempt,
          answer: (text: string) =>
            resolve({
              role: "toolResult",
              toolCallId: command.toolCall.id,
              toolName: command.toolCall.name,
              content: [{ type: "text", text }],
              isError: false,
              timestamp: 1,
            }),
          fail: reject,
        };
        tools.push(tool);
        const waiter = waiting.shift();
        if (waiter !== undefined) {
          taken += 1;
          waiter(tool);
        }
      });
    },
    end(outcome) {
      output.hasEnded = true;
      endTurn(outcome);
    },
    nextTool() {
      const tool = tools[taken];
      if (tool !== undefined) {
        taken += 1;
        return Promise.resolve(tool);
      }
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
  return output;
}

function start(text: string, inputID = `in:${text}`): StartInput {
  return {
    type: "start",
    inputID,
    at: 1_767_225_600_000,
    userMessage: { role: "user", content: text, timestamp: 1_767_225_600_000 },
    context: [],
    settings: { model: "scripted", systemPrompt: "You are a test agent.", tools: [READ] },
  };
}

describe("createRunner()", () => {
  let provider: FakeProvider;
  let store: Store;
  let runner: Runner;
  const errors: unknown[] = [];

  const makeRunner = (s: Store) =>
    createRunner({
      store: s,
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
      onError: (error) => errors.push(error),
      // The tests of the call saved in its step's commit must not take the late path on a slow
      // machine (the request is always built here; a call waiting for a slot says so at once).
      prepareWaitMs: 60_000,
    });

  beforeEach(async () => {
    provider = await startFakeProvider();
    store = createMemoryStore();
    runner = makeRunner(store);
    errors.length = 0;
  });
  afterEach(async () => {
    await runner.shutdown();
    await provider.close();
    await store.close();
  });

  test("a text turn streams every event, commits the answer and saves the exact request", async () => {
    provider.reply({
      type: "sse",
      body: toChatCompletionSse({ text: "Hello there, friend.", chunkSize: 5 }),
    });
    const output = createOutput();
    assert.deepEqual(await runner.submit(CONV, start("hi"), output), {
      type: "applied",
      rejected: null,
    });
    const outcome = await output.ended;
    assert.equal(outcome.type, "final");
    const deltas = output.events.filter((e) => e.type === "text_delta").map((e) => e.delta);
    assert.deepEqual(deltas.join(""), "Hello there, friend.");
    assert.deepEqual(
      output.events.map((e) => e.type).filter((t, i, all) => t !== all[i - 1]),
      ["start", "text_start", "text_delta", "text_end", "done"],
    );
    const loaded = await store.load(CONV);
    assert.equal(loaded?.state.messages.length, 2);
    const call = await store.getLLMCall(loaded?.state.call?.callID ?? "");
    assert.equal(call?.status, "committed");
    assert.equal(
      call?.request,
      (await provider.request(0)).body,
      "the saved request is the body sent",
    );
    assert.ok(!call?.request.includes("sk-test-key"));
    assert.deepEqual(errors, []);
  });

  test("a tool round trip: the next model call starts only after the result, with a prefix-extending body", async () => {
    provider.reply(
      {
        type: "sse",
        body: toChatCompletionSse({
          text: "Reading.",
          toolCalls: [{ id: "call_1", name: "read", arguments: { path: "a.ts" } }],
        }),
      },
      { type: "sse", body: toChatCompletionSse({ text: "It says hi." }) },
    );
    const output = createOutput();
    await runner.submit(CONV, start("what is in a.ts?"), output);
    const tool = await output.nextTool();
    assert.equal(tool.command.toolCall.name, "read");
    assert.deepEqual(tool.command.toolCall.arguments, { path: "a.ts" });
    assert.equal(provider.requests.length, 1, "no second model call before the result");
    assert.equal((await store.getClientOperation(tool.command.operationID))?.status, "sent");
    tool.answer("export const a = 'hi';");
    assert.equal((await output.ended).type, "final");
    const [first, second] = [await provider.request(0), await provider.request(1)];
    const m1 = JSON.parse(first.body).messages as unknown[];
    const m2 = JSON.parse(second.body).messages as unknown[];
    assert.deepEqual(m2.slice(0, m1.length), m1);
    assert.equal(m2.length, m1.length + 2);
    const op = await store.getClientOperation(tool.command.operationID);
    assert.equal(op?.status, "completed");
    assert.equal((await store.load(CONV))?.state.messages.length, 4);
  });

  test("cancel while the model streams: canceled, nothing appended, call marked canceled", async () => {
    provider.reply({
      type: "stall",
      body: toChatCompletionSse({ text: "a long answer" }),
      events: 2,
    });
    const output = createOutput();
    await runner.submit(CONV, start("hi"), output);
    const request = await provider.request(0);
    await runner.submit(
      CONV,
      { type: "cancel", inputID: "cancel-1", at: 2, reason: "user stop" },
      output,
    );
    assert.deepEqual(await output.ended, { type: "canceled", reason: "user stop" });
    await request.closed;
    const loaded = await store.load(CONV);
    assert.equal(loaded?.state.status, "canceled");
    assert.equal(loaded?.state.messages.length, 1);
    assert.equal((await store.getLLMCall(loaded?.state.call?.callID ?? ""))?.status, "canceled");
  });

  test("cancel while a tool runs: a not-run result is appended and the operation canceled", async () => {
    provider.reply({
      type: "sse",
      body: toChatCompletionSse({
        toolCalls: [{ id: "call_1", name: "read", arguments: { path: "x" } }],
      }),
    });
    const output = createOutput();
    await runner.submit(CONV, start("read x"), output);
    const tool = await output.nextTool();
    await runner.submit(
      CONV,
      { type: "cancel", inputID: "cancel-1", at: 2, reason: "stop" },
      output,
    );
    assert.equal((await output.ended).type, "canceled");
    tool.answer("too late");
    const loaded = await store.load(CONV);
    const last = loaded?.state.messages.at(-1);
    assert.ok(last?.role === "toolResult" && last.isError);
    assert.equal((await store.getClientOperation(tool.command.operationID))?.status, "canceled");
  });

  test("a new message while a turn runs supersedes it", async () => {
    provider.reply(
      { type: "stall", body: toChatCompletionSse({ text: "slow" }), events: 1 },
      { type: "sse", body: toChatCompletionSse({ text: "fresh answer" }) },
    );
    const first = createOutput();
    await runner.submit(CONV, start("first"), first);
    await provider.request(0);
    const second = createOutput();
    await runner.submit(CONV, start("second"), second);
    assert.equal((await first.ended).type, "canceled");
    assert.equal((await second.ended).type, "final");
    const roles = (await store.load(CONV))?.state.messages.map((m) => m.role);
    assert.deepEqual(roles, ["user", "user", "assistant"]);
  });

  test("with supersede false, a new message while a turn runs is refused; the turn goes on", async () => {
    provider.reply({ type: "stall", body: toChatCompletionSse({ text: "slow" }), events: 1 });
    const first = createOutput();
    await runner.submit(CONV, start("first"), first);
    await provider.request(0);
    const second = createOutput();
    const refused = await runner.submit(CONV, start("second"), second, { supersede: false });
    assert.deepEqual(refused, { type: "applied", rejected: "turn_in_progress" });
    // The first turn still runs on its own output; cancel it to end the test.
    assert.equal((await runner.inspect(CONV))?.committed.status, "waiting_llm");
    await runner.submit(CONV, { type: "cancel", inputID: "c", at: 1, reason: "done" }, first);
    assert.equal((await first.ended).type, "canceled");
  });

  test("a summarize refused while a batch runs leaves the turn on its own output", async () => {
    provider.reply(
      {
        type: "sse",
        body: toChatCompletionSse({
          toolCalls: [
            { id: "call_1", name: "read", arguments: { path: "a" } },
            { id: "call_2", name: "read", arguments: { path: "b" } },
          ],
        }),
      },
      { type: "sse", body: toChatCompletionSse({ text: "Both read." }) },
    );
    const output = createOutput();
    const input = start("read a and b");
    await runner.submit(
      CONV,
      { ...input, settings: { ...input.settings, readOnlyTools: ["read"] } },
      output,
    );
    const [first, second] = [await output.nextTool(), await output.nextTool()];
    first.answer("a");
    // The client's summarize action on another stream, half-way through the batch.
    const other = createOutput();
    assert.deepEqual(
      await runner.submit(CONV, { type: "compact", inputID: "sum-1", at: 2 }, other),
      { type: "applied", rejected: "turn_in_progress" },
    );
    assert.equal(
      await runner.resume(CONV, createOutput()),
      false,
      "the running turn is still carried by its own output",
    );
    second.answer("b");
    assert.equal((await output.ended).type, "final");
    assert.ok(output.events.some((e) => e.type === "text_delta" && e.delta.includes("Both")));
  });

  test("the same input submitted twice is applied once", async () => {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "once" }) });
    const output = createOutput();
    await runner.submit(CONV, start("hi", "req-1:0"), output);
    await output.ended;
    assert.deepEqual(await runner.submit(CONV, start("hi", "req-1:0"), createOutput()), {
      type: "duplicate",
    });
    assert.equal(provider.requests.length, 1);
  });

  test("a lost compare-and-swap reloads what the other writer committed and re-applies", async () => {
    provider.reply({
      type: "sse",
      body: toChatCompletionSse({
        toolCalls: [{ id: "call_1", name: "read", arguments: { path: "x" } }],
      }),
    });
    const output = createOutput();
    await runner.submit(CONV, start("read x"), output);
    const tool = await output.nextTool();
    // Another server process sharing the store cancels the turn meanwhile.
    const other = makeRunner(store);
    await other.submit(
      CONV,
      { type: "cancel", inputID: "elsewhere", at: 3, reason: "other" },
      createOutput(),
    );
    tool.answer("late result");
    // The first runner loses the compare-and-swap, reloads, and finds nothing waits for it.
    await runner.submit(CONV, start("next", "in:after-conflict"), createOutput());
    const loaded = await store.load(CONV);
    const results = loaded?.state.messages.filter((m) => m.role === "toolResult") ?? [];
    assert.equal(results.length, 1, "the canceled call has exactly one result");
    assert.ok(results[0]?.role === "toolResult" && results[0].isError);
    await other.shutdown();
  });

  test("only the output that carries the turn may cancel it", async () => {
    provider.reply({ type: "stall", body: toChatCompletionSse({ text: "slow" }), events: 1 });
    const output = createOutput();
    await runner.submit(CONV, start("hi"), output);
    await provider.request(0);
    const stale = createOutput();
    assert.deepEqual(
      await runner.submit(CONV, { type: "cancel", inputID: "late", at: 2, reason: "old" }, stale),
      { type: "applied", rejected: "other_stream" },
    );
    assert.equal((await runner.inspect(CONV))?.committed.status, "waiting_llm");
    await runner.submit(CONV, { type: "cancel", inputID: "mine", at: 3, reason: "stop" }, output);
    assert.equal((await output.ended).type, "canceled");
  });

  test("resume attaches nothing for another turn, or while another output carries the turn", async () => {
    provider.reply({ type: "stall", body: toChatCompletionSse({ text: "slow" }), events: 1 });
    const output = createOutput();
    await runner.submit(CONV, start("hi"), output);
    await provider.request(0);
    assert.equal(await runner.resume(CONV, createOutput(), { turnID: "t0" }), false);
    assert.equal(await runner.resume(CONV, createOutput()), false);
    assert.equal(await runner.resume(CONV, output, { turnID: "t1" }), true, "its own output may");
    assert.equal(provider.requests.length, 1, "the running call was not opened twice");
  });

  test("a resume takes over a turn whose output nobody reads: the old output is released, the tool call it was asked is asked again on the new one (outcome unknown), and that answer completes the turn", async () => {
    provider.reply(
      {
        type: "sse",
        body: toChatCompletionSse({
          toolCalls: [{ id: "call_9", name: "read", arguments: { path: "w" } }],
        }),
      },
      { type: "sse", body: toChatCompletionSse({ text: "w is empty" }) },
    );
    const outputA = createOutput();
    await runner.submit(CONV, start("read w"), outputA);
    const lost = await outputA.nextTool();
    assert.equal(lost.attempt.outcomeUnknown, false);
    // While A has a reader, the turn is A's.
    assert.equal(await runner.resume(CONV, createOutput()), false);

    outputA.detached = true;
    const outputB = createOutput();
    assert.equal(await runner.resume(CONV, outputB), true);
    assert.deepEqual(outputA.released, ["another stream resumed the turn"]);
    // B is told which output it took the turn from (its turn state is handed on, transport).
    assert.equal(outputB.resumedAs[0]?.from, outputA);
    const again = await outputB.nextTool();
    assert.equal(again.command.operationID, lost.command.operationID);
    assert.equal(again.attempt.outcomeUnknown, true, "it was sent through A and may have run");
    // A no longer carries the turn: its cancel (e.g. its grace running out) changes nothing.
    assert.deepEqual(
      await runner.submit(
        CONV,
        { type: "cancel", inputID: "gone", at: 2, reason: "gone" },
        outputA,
      ),
      { type: "applied", rejected: "other_stream" },
    );
    again.answer("");
    assert.equal((await outputB.ended).type, "final");
    assert.equal(outputA.hasEnded, false, "the old output never gets the turn's end");
    assert.equal(outputB.tools.length, 1, "asked once on B");
    assert.equal(provider.requests.length, 2);
    assert.deepEqual(errors, []);
  });

  test("a resume takes over a running model call from an output nobody reads: the call is not opened twice, and the new output carries the turn", async () => {
    provider.reply({ type: "stall", body: toChatCompletionSse({ text: "slow" }), events: 1 });
    const outputA = createOutput();
    await runner.submit(CONV, start("hi"), outputA);
    await provider.request(0);
    outputA.detached = true;
    const outputB = createOutput();
    assert.equal(await runner.resume(CONV, outputB), true);
    assert.equal(outputA.released.length, 1);
    assert.equal(provider.requests.length, 1, "the running call was not opened twice");
    // The old output's cancel is refused; the new one's ends the turn on the new output only.
    assert.deepEqual(
      await runner.submit(CONV, { type: "cancel", inputID: "old", at: 2, reason: "gone" }, outputA),
      { type: "applied", rejected: "other_stream" },
    );
    await runner.submit(CONV, { type: "cancel", inputID: "new", at: 3, reason: "stop" }, outputB);
    assert.equal((await outputB.ended).type, "canceled");
    assert.equal(outputA.hasEnded, false);
  });

  test("a cancel right after the turn started ends it canceled; its call, saved with the turn's start and let go, is aborted", async () => {
    // The call is prepared before the step that plans it is committed, saved in that commit and
    // let go right after it (model-call.ts): a cancel applies after that step, so it aborts a
    // call whose bytes may already be on their way (whether the provider got them before the
    // abort is a race of the network, not of the runner).
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "never read" }) });
    const output = createOutput();
    await runner.submit(CONV, start("hi"), output);
    const callID = (await store.load(CONV))?.state.call?.callID ?? "";
    const saved = await store.getLLMCall(callID);
    assert.equal(saved?.status, "streaming", "saved, let go, before the cancel applies");
    await runner.submit(CONV, { type: "cancel", inputID: "c", at: 2, reason: "stop" }, output);
    assert.equal((await output.ended).type, "canceled");
    await runner.shutdown();
    assert.equal((await store.getLLMCall(callID))?.status, "canceled");
    assert.ok(provider.requests.length <= 1, "sent at most once");
    for (const request of provider.requests) assert.equal(request.body, saved?.request);
  });

  /** `store` with its writes counted, and `commitInput` gated by `beforeCommit` when set. */
  const countingStore = (beforeCommit?: () => Promise<void>) => {
    const writes = { commits: [] as string[][], saves: 0 };
    const counted: Store = new Proxy(store, {
      get(target, key, receiver) {
        if (key === "saveLLMCall") {
          return (call: Parameters<Store["saveLLMCall"]>[0]) => {
            writes.saves += 1;
            return target.saveLLMCall(call);
          };
        }
        if (key === "commitInput") {
          return async (commit: Parameters<Store["commitInput"]>[0]) => {
            await beforeCommit?.();
            writes.commits.push((commit.records ?? []).map((record) => record.type));
            return target.commitInput(commit);
          };
        }
        return Reflect.get(target, key, receiver);
      },
    });
    return { counted, writes };
  };

  test("a model call is saved in the commit of the step that plans it: one write before the send", async () => {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "Hello." }) });
    const { counted, writes } = countingStore();
    const counting = makeRunner(counted);
    const output = createOutput();
    await counting.submit(CONV, start("hi"), output);
    assert.equal((await output.ended).type, "final");
    await counting.shutdown();
    assert.equal(writes.saves, 0, "no write of its own");
    assert.ok(writes.commits[0]?.includes("llm_call"), "saved with the turn's start");
    const callID = (await store.load(CONV))?.state.call?.callID ?? "";
    const call = await store.getLLMCall(callID);
    assert.equal(call?.request, (await provider.request(0)).body, "the saved request was sent");
    assert.equal(call?.status, "committed");
    assert.deepEqual(errors, []);
  });

  test("a step that is not committed sends nothing of the call it planned", async () => {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "never sent" }) });
    const { counted } = countingStore(() => Promise.reject(new Error("disk on fire")));
    const failing = makeRunner(counted);
    const output = createOutput();
    await assert.rejects(failing.submit(CONV, start("hi"), output), /disk on fire/);
    assert.equal((await output.ended).type, "failed");
    await failing.shutdown();
    assert.equal(provider.requests.length, 0);
  });

  test("a call whose request is not ready in time is committed without it, and saves it before it is sent", async () => {
    provider.reply({ type: "sse", body: toChatCompletionSse({ text: "Hello." }) });
    let committed!: () => void;
    const stepCommitted = new Promise<void>((resolve) => {
      committed = resolve;
    });
    const { counted, writes } = countingStore();
    const inner = createLLM({
      models: createModelConfigs([
        {
          name: "scripted",
          api: "openai-compatible",
          model: "scripted-model",
          baseUrl: provider.url,
          apiKey: "sk-test-key",
        },
      ]),
    });
    // As a call queued for a slot of its model: its request is known only after the step.
    const late = createRunner({
      store: new Proxy(counted, {
        get(target, key, receiver) {
          if (key !== "commitInput") return Reflect.get(target, key, receiver);
          return async (commit: Parameters<Store["commitInput"]>[0]) => {
            const result = await target.commitInput(commit);
            committed();
            return result;
          };
        },
      }),
      llm: {
        ...inner,
        stream: (call) =>
          inner.stream({
            ...call,
            beforeSend: async (exact) => {
              await stepCommitted;
              await call.beforeSend?.(exact);
            },
          }),
      },
      onError: (error) => errors.push(error),
    });
    const output = createOutput();
    await late.submit(CONV, start("hi"), output);
    assert.equal((await output.ended).type, "final");
    await late.shutdown();
    assert.ok(!writes.commits[0]?.includes("llm_call"));
    assert.equal(writes.saves, 1, "saved by a write of its own");
    const callID = (await store.load(CONV))?.state.call?.callID ?? "";
    const call = await store.getLLMCall(callID);
    assert.equal(call?.request, (await provider.request(0)).body);
    assert.equal(call?.status, "committed");
    assert.deepEqual(errors, []);
  });

  test("an unknown model fails the turn with a clear message and commits nothing but the question", async () => {
    const output = createOutput();
    const input = { ...start("hi"), settings: { ...start("hi").settings, model: "nope" } };
    await runner.submit(CONV, input, output);
    const outcome = await output.ended;
    assert.ok(outcome.type === "failed");
    assert.match(outcome.message.errorMessage ?? "", /nope/);
    assert.equal((await store.load(CONV))?.state.messages.length, 1);
  });
});

describe("resuming after the process stopped", () => {
  let dir: string;
  let provider: FakeProvider;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "cursor-byok-runner-"));
    provider = await startFakeProvider();
  });
  afterEach(async () => {
    await provider.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const llm = () =>
    createLLM({
      models: createModelConfigs([
        {
          name: "scripted",
          api: "openai-compatible",
          model: "scripted-model",
          baseUrl: provider.url,
          apiKey: "k",
        },
      ]),
    });

  test("a model call cut off mid-stream is retried with the same id and the saved bytes", async () => {
    const path = join(dir, "db.sqlite");
    provider.reply(
      { type: "stall", body: toChatCompletionSse({ text: "partial answer" }), events: 2 },
      { type: "sse", body: toChatCompletionSse({ text: "complete answer" }) },
    );
    const storeA = openSqliteStore({ path });
    const runnerA = createRunner({ store: storeA, llm: llm() });
    await runnerA.submit(CONV, start("hi"), createOutput());
    const firstRequest = await provider.request(0);
    await runnerA.shutdown(); // like a crash: nothing is committed for the open call
    await storeA.close();

    const storeB = openSqliteStore({ path });
    const runnerB = createRunner({ store: storeB, llm: llm() });
    const output = createOutput();
    assert.equal(await runnerB.resume(CONV, output), true);
    assert.equal((await output.ended).type, "final");
    const retried = await provider.request(1);
    assert.equal(retried.body, firstRequest.body, "byte-identical retry");
    const loaded = await storeB.load(CONV);
    assert.equal(loaded?.state.messages.length, 2);
    assert.equal((await storeB.getLLMCall(loaded?.state.call?.callID ?? ""))?.status, "committed");
    await runnerB.shutdown();
    await storeB.close();
  });

  test("a tool call left waiting is asked for again, and its result completes the turn", async () => {
    const path = join(dir, "db.sqlite");
    provider.reply(
      {
        type: "sse",
        body: toChatCompletionSse({
          toolCalls: [{ id: "call_7", name: "read", arguments: { path: "z" } }],
        }),
      },
      { type: "sse", body: toChatCompletionSse({ text: "z is empty" }) },
    );
    const storeA = openSqliteStore({ path });
    const runnerA = createRunner({ store: storeA, llm: llm() });
    const outputA = createOutput();
    await runnerA.submit(CONV, start("read z"), outputA);
    const lost = await outputA.nextTool();
    await runnerA.shutdown();
    await storeA.close();

    const storeB = openSqliteStore({ path });
    const runnerB = createRunner({ store: storeB, llm: llm() });
    const outputB = createOutput();
    assert.equal(await runnerB.resume(CONV, outputB), true);
    const again = await outputB.nextTool();
    assert.equal(again.command.operationID, lost.command.operationID);
    again.answer("");
    assert.equal((await outputB.ended).type, "final");
    assert.equal((await storeB.load(CONV))?.state.messages.length, 4);
    await runnerB.shutdown();
    await storeB.close();
  });

  test("a resume with a new request id binds it to the running turn with its client state; the first stream's is released, a refused resume binds nothing", async () => {
    const path = join(dir, "db.sqlite");
    provider.reply({
      type: "sse",
      body: toChatCompletionSse({
        toolCalls: [{ id: "call_8", name: "read", arguments: { path: "y" } }],
      }),
    });
    const storeA = openSqliteStore({ path });
    const runnerA = createRunner({ store: storeA, llm: llm() });
    const outputA = createOutput();
    await runnerA.submit(CONV, { ...start("read y"), origin: "req-a" }, outputA, {
      requestID: "req-a",
      clientState: Uint8Array.of(1),
    });
    await outputA.nextTool();
    await runnerA.shutdown();
    await storeA.close();

    const storeB = openSqliteStore({ path });
    const runnerB = createRunner({ store: storeB, llm: llm() });
    const outputB = createOutput();
    const resumed = runnerB.resume(CONV, outputB, {
      requestID: "req-b",
      clientState: Uint8Array.of(2),
    });
    assert.equal(await resumed, true);
    const started = await storeB.findRequestStream("req-a");
    const bound = await storeB.findRequestStream("req-b");
    assert.equal(bound?.conversationID, CONV);
    assert.equal(bound?.turnID, started?.turnID);
    assert.deepEqual([...(bound?.clientState ?? [])], [2]);
    assert.equal(started?.clientState, null, "the turn's first stream is released");
    await outputB.nextTool(); // asked again, on the resume's output
    // The resume's output learned the turn's own client id before anything was asked on it.
    assert.deepEqual(outputB.resumedAs, [{ origin: "req-a", toolsAsked: 0 }]);
    assert.deepEqual(outputA.resumedAs, [], "the output that started the turn is not told");

    // Another output may not take the turn outputB carries: nothing is bound for it.
    const refused = runnerB.resume(CONV, createOutput(), {
      requestID: "req-c",
      clientState: Uint8Array.of(3),
    });
    assert.equal(await refused, false);
    assert.equal(await storeB.findRequestStream("req-c"), null);
    assert.deepEqual([...((await storeB.findRequestStream("req-b"))?.clientState ?? [])], [2]);
    await runnerB.shutdown();
    await storeB.close();
  });

  test("a resume whose binding finds the conversation moved on (another process committed) attaches nothing and binds nothing", async () => {
    provider.reply(
      {
        type: "sse",
        body: toChatCompletionSse({
          toolCalls: [{ id: "call_9", name: "read", arguments: { path: "x" } }],
        }),
      },
      { type: "sse", body: toChatCompletionSse({ text: "x is empty" }) },
    );
    // Two runners on one database, as two processes of a cluster.
    const store = createMemoryStore();
    const runnerA = createRunner({ store, llm: llm() });
    const outputA = createOutput();
    await runnerA.submit(CONV, start("read x"), outputA, { requestID: "req-a" });
    const asked = await outputA.nextTool();
    // The second one holds the conversation at the version the tool call was asked at.
    const runnerB = createRunner({ store, llm: llm() });
    const held = createOutput();
    assert.equal(await runnerB.resume(CONV, held), true);
    runnerB.detach(CONV, held);
    // The first one goes on: the tool's result, then the final answer.
    asked.answer("");
    assert.equal((await outputA.ended).type, "final");

    const output = createOutput();
    assert.equal(await runnerB.resume(CONV, output, { requestID: "req-b" }), false);
    assert.equal(await store.findRequestStream("req-b"), null);
    assert.equal((await runnerB.inspect(CONV))?.committed.status, "final", "reloaded");
    await runnerA.shutdown();
    await runnerB.shutdown();
    await store.close();
  });
});
