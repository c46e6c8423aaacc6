/**
 * `createLLM` beyond the per-provider matrix: model resolution, keys, the caller's signal,
 * request policy that only shows against particular endpoints, and the model listing.
 */
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { after, before, describe, test } from "node:test";
import { createModelConfig, type ModelConfigInput } from "./config.ts";
import { createLLM, toPromptCacheKey } from "./llm.ts";
import { firstRequest } from "./testing/behaviours.ts";
import { type FakeProvider, readFixture, startFakeProvider } from "./testing/fake-provider.ts";
import { collect, collectChecked, recordingSleep, terminalOf } from "./testing/streams.ts";
import type { LLMCall, ResponseEvent } from "./types.ts";

const KEY = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0";

let fake: FakeProvider;
before(async () => {
  fake = await startFakeProvider();
});
after(() => fake.close());

function llmWith(input: ModelConfigInput, extra: Partial<Parameters<typeof createLLM>[0]> = {}) {
  return createLLM({
    models: [createModelConfig(input)],
    retry: { sleep: recordingSleep().sleep, random: () => 0 },
    ...extra,
  });
}

function call(model: string, extra: Partial<LLMCall> = {}): LLMCall {
  return { callID: "call-1", model, request: firstRequest(), conversationID: "conv-1", ...extra };
}

function errorOf(events: readonly ResponseEvent[]) {
  const last = terminalOf(events);
  assert.equal(last.type, "error");
  return last as Extract<ResponseEvent, { type: "error" }>;
}

describe("createLLM", { timeout: 10_000 }, () => {
  test("an unknown model name is an error event, not an exception", async () => {
    const llm = llmWith({
      name: "claude",
      api: "anthropic",
      model: "claude-sonnet-4-5",
      baseUrl: fake.url,
      apiKey: KEY,
    });
    const events = await collectChecked(llm.stream(call("gpt-7")));
    assert.equal(events.length, 1);
    assert.match(errorOf(events).error.errorMessage ?? "", /unknown model "gpt-7"/);
  });

  test("a key variable that is not set fails the call by name, and sends nothing", async () => {
    const sent = fake.requests.length;
    const env: Record<string, string | undefined> = {};
    const llm = llmWith(
      {
        name: "claude",
        api: "anthropic",
        model: "claude-sonnet-4-5",
        baseUrl: fake.url,
        apiKeyEnv: "ANTHROPIC_API_KEY",
      },
      { env },
    );
    const events = await collect(llm.stream(call("claude")));
    assert.equal(
      errorOf(events).error.errorMessage,
      'no API key for model "claude": environment variable ANTHROPIC_API_KEY is not set',
    );
    assert.equal(fake.requests.length, sent);

    env.ANTHROPIC_API_KEY = KEY; // read at call time
    fake.reply({ type: "sse", body: readFixture("anthropic", "text") });
    const ok = terminalOf(await collect(llm.stream(call("claude"))));
    assert.equal(ok.type, "done");
    assert.equal(fake.requests.at(-1)?.headers["x-api-key"], KEY);
  });

  test("a provider error that echoes the key is redacted", async () => {
    const llm = llmWith({
      name: "claude",
      api: "anthropic",
      model: "claude-sonnet-4-5",
      baseUrl: fake.url,
      apiKey: KEY,
    });
    fake.reply({
      type: "status",
      status: 401,
      body: JSON.stringify({
        type: "error",
        error: { type: "authentication_error", message: `invalid x-api-key: ${KEY}` },
      }),
    });
    const stream = llm.stream(call("claude"));
    const message = errorOf(await collect(stream)).error.errorMessage ?? "";
    assert.match(message, /401/);
    assert.match(message, /\[redacted\]/);
    assert.equal(message.includes(KEY), false);
    assert.deepEqual(stream.attempts, [{ attempt: 1, status: 401 }], "401 is not retried");
  });

  test("configured headers are sent; they and the key stay out of the exact request", async () => {
    const llm = llmWith({
      name: "gpt",
      api: "openai-chat",
      model: "gpt-4.1",
      baseUrl: `${fake.url}/v1`,
      apiKey: KEY,
      headers: { "X-Proxy-Token": "proxy-token-9f8e" },
    });
    fake.reply({ type: "sse", body: readFixture("openai-chat", "text") });
    const stream = llm.stream(call("gpt"));
    await collect(stream);
    const received = fake.requests.at(-1);
    assert.equal(received?.headers["x-proxy-token"], "proxy-token-9f8e");
    assert.equal(received?.headers.authorization, `Bearer ${KEY}`);
    assert.equal(received?.headers["user-agent"], "cursor-byok");
    const exact = JSON.stringify(stream.exactRequest);
    assert.equal(exact.includes(KEY) || exact.includes("proxy-token-9f8e"), false);
  });

  test("the caller's signal aborts the call", async () => {
    const llm = llmWith({
      name: "claude",
      api: "anthropic",
      model: "claude-sonnet-4-5",
      baseUrl: fake.url,
      apiKey: KEY,
    });
    const sent = fake.requests.length;
    const events = await collect(llm.stream(call("claude", { signal: AbortSignal.abort() })));
    assert.equal(errorOf(events).reason, "aborted");
    assert.equal(fake.requests.length, sent, "an aborted call sends nothing");

    const controller = new AbortController();
    fake.reply({ type: "stall", body: readFixture("anthropic", "text"), events: 5 });
    const stream = llm.stream(call("claude", { signal: controller.signal }));
    assert.equal((await stream.recv())?.type, "start");
    controller.abort();
    assert.equal(errorOf(await collect(stream)).reason, "aborted");
    assert.equal(stream.signal.aborted, true);
  });

  test("a long-lived caller signal keeps no listener once a call ended", async () => {
    const llm = createLLM({ models: [] });
    const controller = new AbortController();
    for (const callID of ["a", "b", "c"]) {
      await collect(llm.stream({ ...call("demo", { signal: controller.signal }), callID }));
    }
    await collect(llm.stream(call("missing", { signal: controller.signal })));
    assert.equal(getEventListeners(controller.signal, "abort").length, 0);
  });

  test("Anthropic's own endpoint gets complete, stateless requests (no server-side threads)", async () => {
    // The default base URL, routed to the fake provider: pi-ai turns threads on only for it.
    const redirect: typeof fetch = (input, init) =>
      fetch(String(input).replace("https://api.anthropic.com", fake.url), init);
    const llm = llmWith(
      { name: "claude", api: "anthropic", model: "claude-sonnet-4-5", apiKey: KEY },
      { fetch: redirect },
    );
    const first = fake.requests.length;
    fake.reply(
      { type: "sse", body: readFixture("anthropic", "text") },
      { type: "sse", body: readFixture("anthropic", "text") },
    );
    const answer = terminalOf(await collect(llm.stream(call("claude"))));
    assert.ok(answer.type === "done");
    const next = firstRequest();
    next.messages.push(answer.message, { role: "user", content: "More, please.", timestamp: 2 });
    assert.equal(
      terminalOf(await collect(llm.stream(call("claude", { request: next })))).type,
      "done",
    );
    for (const request of fake.requests.slice(first)) {
      const body = JSON.parse(request.body) as { thread?: unknown; messages: unknown[] };
      assert.equal(body.thread, undefined);
      assert.equal(
        String(request.headers["anthropic-beta"] ?? "").includes("message-threads"),
        false,
      );
    }
    assert.equal(
      (JSON.parse(fake.requests.at(-1)?.body ?? "") as { messages: unknown[] }).messages.length,
      3,
    );
  });

  test("a keyless local server (Ollama) works without a configured key", async () => {
    const llm = llmWith({
      name: "local",
      api: "openai-compatible",
      provider: "ollama",
      model: "qwen3-coder:30b",
      baseUrl: `${fake.url}/v1`,
    });
    fake.reply({ type: "sse", body: readFixture("openai-chat", "text") });
    const last = terminalOf(await collect(llm.stream(call("local"))));
    assert.equal(last.type, "done");
    const received = fake.requests.at(-1);
    assert.equal(received?.url, "/v1/chat/completions");
    const body = JSON.parse(received?.body ?? "") as Record<string, unknown>;
    assert.equal(body.model, "qwen3-coder:30b");
    assert.equal(body.prompt_cache_key, undefined, "no OpenAI-only fields for an unknown server");
  });

  test("the model listing has what Cursor's picker needs", () => {
    const llm = createLLM({
      models: [
        createModelConfig({
          name: "Claude Sonnet",
          api: "anthropic",
          model: "claude-sonnet-4-5",
          thinking: "high",
          maxMode: { contextWindow: 1_000_000, maxOutput: 128_000 },
        }),
        createModelConfig({
          name: "Local",
          api: "openai-compatible",
          provider: "ollama",
          model: "llama3",
        }),
      ],
    });
    assert.deepEqual(llm.listModels(), [
      {
        name: "Claude Sonnet",
        provider: "anthropic",
        api: "anthropic",
        upstreamId: "claude-sonnet-4-5",
        contextWindow: 200_000,
        maxOutput: 64_000,
        reasoning: true,
        thinking: "high",
        input: ["text", "image"],
        prices: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
        compaction: {
          auto: true,
          threshold: 0.8,
          summaryModel: null,
          tailMessages: 6,
          charsPerToken: 3.5,
        },
        demo: false,
        options: {
          thinking: true,
          efforts: ["minimal", "low", "medium", "high"],
          maxMode: true,
          parallelToolCalls: true,
        },
        maxModeContextWindow: 1_000_000,
        maxModeMaxOutput: 128_000,
        fallbacks: [],
        maxConcurrent: null,
      },
      {
        name: "Local",
        provider: "ollama",
        api: "openai-compatible",
        upstreamId: "llama3",
        contextWindow: 128_000,
        maxOutput: 16_384,
        reasoning: false,
        thinking: "off",
        input: ["text"],
        prices: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        compaction: {
          auto: true,
          threshold: 0.8,
          summaryModel: null,
          tailMessages: 6,
          charsPerToken: 3.5,
        },
        demo: false,
        options: { thinking: false, efforts: [], maxMode: false, parallelToolCalls: true },
        maxModeContextWindow: 128_000,
        maxModeMaxOutput: 16_384,
        fallbacks: [],
        maxConcurrent: null,
      },
    ]);
    assert.equal(llm.findModel("Local")?.provider, "ollama");
  });

  test("the prompt-cache key is stable per conversation, short, and not the id itself", () => {
    const key = toPromptCacheKey("conversation-1");
    assert.equal(key, toPromptCacheKey("conversation-1"));
    assert.notEqual(key, toPromptCacheKey("conversation-2"));
    assert.equal(key.length, 36);
    assert.equal(key.includes("conversation"), false);
  });
});
