/**
 * Tool batches, compaction and model routing together through the runner, the real LLM layer (a
 * fake OpenAI-compatible provider on 127.0.0.1) and a real store: a batch answered out of order,
 * then the client's summarize, then a call that fails before its first token. The summary call goes
 * to the summary model and is never failed over; the failover repeats the compacted request
 * byte for byte on the fallback; the stored history is complete.
 */
import assert from "node:assert/strict";
import { afterEach, beforeEach, describe, test } from "node:test";
import { createLLM, createModelConfigs } from "../llm/index.ts";
import { toChatCompletionSse } from "../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../llm/testing/fake-provider.ts";
import type {
  CallClientCommand,
  StartInput,
  ToolResultMessage,
  TurnSettings,
} from "../loop/index.ts";
import { createMemoryStore, type Store } from "../store/index.ts";
import { createRunner } from "./runner.ts";
import type { Runner, TurnOutcome, TurnOutput } from "./types.ts";

const CONV = "conv-mixed";
const AT = 1_767_225_600_000;
const READ = {
  name: "read",
  description: "Read a file.",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
};
const SETTINGS: TurnSettings = {
  model: "main",
  fallbacks: ["spare"],
  systemPrompt: "You are a test agent.",
  tools: [READ],
  readOnlyTools: ["read"],
  compaction: {
    auto: false,
    contextWindow: 100_000,
    outputReserve: 1_000,
    threshold: 0.8,
    summaryModel: "summarizer",
    tailMessages: 2,
    charsPerToken: 4,
  },
};

interface Output extends TurnOutput {
  readonly ended: Promise<TurnOutcome>;
  readonly tools: CallClientCommand[];
  /** Resolves when `count` tool calls are open. */
  waitTools(count: number): Promise<void>;
  answer(index: number, text: string): void;
}

function createOutput(): Output {
  let end!: (outcome: TurnOutcome) => void;
  const ended = new Promise<TurnOutcome>((resolve) => {
    end = resolve;
  });
  const tools: CallClientCommand[] = [];
  const answers: ((result: ToolResultMessage) => void)[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  return {
    ended,
    tools,
    publish() {},
    runTool(command) {
      tools.push(command);
      const result = new Promise<ToolResultMessage>((resolve) => answers.push(resolve));
      for (const waiter of waiters.filter((w) => tools.length >= w.count)) waiter.resolve();
      return result;
    },
    end(outcome) {
      end(outcome);
    },
    waitTools(count) {
      if (tools.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    answer(index, text) {
      const call = (tools[index] as CallClientCommand).toolCall;
      answers[index]?.({
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: [{ type: "text", text }],
        isError: false,
        timestamp: AT,
      });
    },
  };
}

function start(text: string): StartInput {
  return {
    type: "start",
    inputID: `in:${text}`,
    at: AT,
    userMessage: { role: "user", content: text, timestamp: AT },
    context: [],
    settings: SETTINGS,
  };
}

/** The request body's messages, without the upstream model name. */
function messagesOf(body: string): string {
  return JSON.stringify((JSON.parse(body) as { messages: unknown }).messages);
}

describe("batches, summarize and failover through the runner", () => {
  let provider: FakeProvider;
  let store: Store;
  let runner: Runner;

  beforeEach(async () => {
    provider = await startFakeProvider();
    store = createMemoryStore();
    const compatible = { api: "openai-compatible", baseUrl: provider.url, apiKey: "sk-test" };
    runner = createRunner({
      store,
      llm: createLLM({
        models: createModelConfigs([
          { ...compatible, name: "main", model: "main-up", fallbacks: ["spare"] },
          { ...compatible, name: "spare", model: "spare-up" },
          { ...compatible, name: "summarizer", model: "summary-up" },
        ]),
        retry: { sleep: async () => {}, maxAttempts: 2 },
      }),
    });
  });
  afterEach(async () => {
    await runner.shutdown();
    await provider.close();
    await store.close();
  });

  const submit = async (input: Parameters<Runner["submit"]>[1], output: Output) => {
    assert.deepEqual(await runner.submit(CONV, input, output), { type: "applied", rejected: null });
    return output;
  };

  test("the summary goes to the summary model; the failover repeats the compacted request", async () => {
    const rateLimited = { type: "status", status: 429, body: '{"error":"slow down"}' } as const;
    provider.reply(
      {
        type: "sse",
        body: toChatCompletionSse({
          text: "Reading.",
          toolCalls: ["a", "b", "c"].map((path, i) => ({
            id: `call_${i}`,
            name: "read",
            arguments: { path },
          })),
        }),
      },
      { type: "sse", body: toChatCompletionSse({ text: "All three read." }) },
      // The summarize turn's summary call: a rate limit is not failed over, the retry answers.
      rateLimited,
      { type: "sse", body: toChatCompletionSse({ text: "Summary: read a, b and c." }) },
      // The next turn: main is rate limited before its first token; spare answers.
      rateLimited,
      rateLimited,
      { type: "sse", body: toChatCompletionSse({ text: "From spare." }) },
    );
    const first = await submit(start("read a, b and c"), createOutput());
    await first.waitTools(3);
    first.answer(2, "C".repeat(300));
    first.answer(0, "A".repeat(300));
    first.answer(1, "B".repeat(300));
    assert.equal((await first.ended).type, "final");

    const summarize = await submit({ type: "compact", inputID: "sum", at: AT }, createOutput());
    assert.equal((await summarize.ended).type, "final");
    const second = await submit(start("and now?"), createOutput());
    assert.equal((await second.ended).type, "final");

    const bodies = await Promise.all(
      Array.from({ length: 7 }, async (_, i) => (await provider.request(i)).body),
    );
    const models = bodies.map((body) => String(JSON.parse(body).model));
    assert.deepEqual(models, [
      "main-up",
      "main-up",
      "summary-up",
      "summary-up",
      "main-up",
      "main-up",
      "spare-up",
    ]);
    // Results in the model's order, whatever order they came in.
    const afterBatch = JSON.parse(messagesOf(bodies[1] as string)) as { content?: unknown }[];
    assert.deepEqual(
      afterBatch.slice(-3).map((m) => String(m.content).slice(0, 1)),
      ["A", "B", "C"],
    );
    // The failover sends the compacted request unchanged.
    const compacted = messagesOf(bodies[4] as string);
    assert.ok(compacted.includes("Summary: read a, b and c."));
    assert.equal(messagesOf(bodies[6] as string), compacted);

    const state = (await store.load(CONV))?.state;
    assert.equal(state?.compactions?.length, 1);
    assert.equal(state?.messages.length, 8, "the history is complete: 6 + 2 messages");
    assert.deepEqual(state?.route, { requested: "main", model: "spare" });
  });
});
