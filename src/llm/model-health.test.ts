import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { createModelConfigs } from "./config.ts";
import { toFailureKind } from "./failure-kind.ts";
import { createLLM } from "./llm.ts";
import { createModelHealth } from "./model-health.ts";
import { firstRequest } from "./testing/behaviours.ts";
import { readFixture, startFakeProvider } from "./testing/fake-provider.ts";
import { collect } from "./testing/streams.ts";

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe("model health", () => {
  test("a model with maxConcurrent runs that many calls; the next waits, first come first served", async () => {
    const health = createModelHealth([{ name: "m", maxConcurrent: 2 }]);
    const signal = new AbortController().signal;
    const first = await health.acquire("m", signal);
    const second = await health.acquire("m", signal);
    const order: string[] = [];
    const third = health.acquire("m", signal).then((release) => {
      order.push("third");
      return release;
    });
    const fourth = health.acquire("m", signal).then((release) => {
      order.push("fourth");
      return release;
    });
    assert.deepEqual(
      health.snapshot().map(({ inFlight, waiting }) => ({ inFlight, waiting })),
      [{ inFlight: 2, waiting: 2 }],
    );
    first();
    first(); // a second release does nothing
    (await third)();
    second();
    (await fourth)();
    assert.deepEqual(order, ["third", "fourth"]);
    assert.equal(health.snapshot()[0]?.inFlight, 0);
  });

  test("a call told that it waits for a slot is told at once, and only when it waits", async () => {
    const health = createModelHealth([{ name: "m", maxConcurrent: 1 }, { name: "free" }]);
    const signal = new AbortController().signal;
    const told: string[] = [];
    const held = await health.acquire("m", signal, () => told.push("first"));
    await health.acquire("free", signal, () => told.push("free"));
    const waiting = health.acquire("m", signal, () => told.push("second"));
    assert.deepEqual(told, ["second"], "synchronously, before any slot is released");
    held();
    (await waiting)();
    assert.deepEqual(told, ["second"]);
  });

  test("an abort ends the wait for a slot and gives up its place", async () => {
    const health = createModelHealth([{ name: "m", maxConcurrent: 1 }]);
    const held = await health.acquire("m", new AbortController().signal);
    const controller = new AbortController();
    const waiting = health.acquire("m", controller.signal);
    controller.abort(new Error("canceled"));
    await assert.rejects(waiting, /canceled/);
    assert.equal(health.snapshot()[0]?.waiting, 0);
    held();
    assert.equal(health.snapshot()[0]?.inFlight, 0);
  });

  test("models without a limit, and unknown models, never wait", async () => {
    const health = createModelHealth([{ name: "free" }]);
    const signal = new AbortController().signal;
    const releases = await Promise.all(
      Array.from({ length: 50 }, () => health.acquire("free", signal)),
    );
    assert.equal(health.snapshot()[0]?.inFlight, 50);
    for (const release of releases) release();
    await health.acquire("unknown", signal);
  });

  test("repeated 429s cool the model down for a while; the first call after it goes through", () => {
    const time = clock();
    const health = createModelHealth([{ name: "m" }], {
      cooldownAfter429s: 3,
      cooldownMs: 30_000,
      now: time.now,
    });
    health.failed("m", "rate_limited", "429 Too Many Requests", 2);
    assert.equal(health.refusal("m"), null);
    assert.equal(health.snapshot()[0]?.state, "failing");
    health.failed("m", "rate_limited", "429 Too Many Requests", 1);
    const refusal = health.refusal("m");
    assert.match(
      refusal ?? "",
      /^cooling down: model "m" got 3 or more rate-limit responses in a row and is not called for another 30 s$/,
    );
    assert.equal(toFailureKind([], refusal ?? ""), "cooling_down");
    assert.equal(health.snapshot()[0]?.state, "cooling_down");
    time.advance(29_000);
    assert.match(health.refusal("m") ?? "", /another 1 s/);
    time.advance(1_000);
    assert.equal(health.refusal("m"), null);
    assert.equal(health.snapshot()[0]?.coolingDownUntil, null);
  });

  test("a success resets the count of rate limits in a row; other failures do not count", () => {
    const health = createModelHealth([{ name: "m" }], { cooldownAfter429s: 3 });
    health.failed("m", "rate_limited", "429", 2);
    health.succeeded("m");
    health.failed("m", "rate_limited", "429", 2);
    health.failed("m", "server_error", "500", 0);
    assert.equal(health.refusal("m"), null);
    assert.equal(health.snapshot()[0]?.rateLimitsInARow, 2);
    assert.deepEqual(health.snapshot()[0]?.lastFailure?.kind, "server_error");
  });
});

describe("failure kinds", () => {
  test("from the last attempt's status, a connection failure, or the provider's streamed error", () => {
    const cases: [Parameters<typeof toFailureKind>[0], string, string][] = [
      [[{ attempt: 1, status: 429 }], "429", "rate_limited"],
      [
        [
          { attempt: 1, status: 500 },
          { attempt: 2, status: 529 },
        ],
        "529",
        "overloaded",
      ],
      [[{ attempt: 1, status: 503 }], "503", "overloaded"],
      [[{ attempt: 1, status: 502 }], "502", "server_error"],
      [[{ attempt: 1, error: "ECONNRESET" }], "fetch failed", "connection"],
      [
        [{ attempt: 1, status: 200 }],
        '{"type":"overloaded_error","message":"Overloaded"}',
        "overloaded",
      ],
      [[{ attempt: 1, status: 200 }], "Rate limit reached for requests", "rate_limited"],
      [[{ attempt: 1, status: 200 }], "RESOURCE_EXHAUSTED", "rate_limited"],
      [[{ attempt: 1, status: 400 }], "400 invalid request", "other"],
      [[{ attempt: 1, status: 401 }], "401 invalid key", "other"],
      [[], "unknown model", "other"],
    ];
    for (const [attempts, message, kind] of cases) {
      assert.equal(toFailureKind(attempts, message), kind, message);
    }
  });
});

describe("model health in the LLM layer", () => {
  test("maxConcurrent: a second call is not sent before the first one ends", async () => {
    const fake = await startFakeProvider();
    try {
      const llm = createLLM({
        models: createModelConfigs([
          {
            name: "one-at-a-time",
            api: "openai-compatible",
            model: "m",
            baseUrl: fake.url,
            apiKey: "sk-test-not-real-000000000000",
            maxConcurrent: 1,
          },
        ]),
      });
      fake.reply({ type: "hang" }, { type: "sse", body: readFixture("openai-compatible", "text") });
      const call = (callID: string) => ({
        callID,
        model: "one-at-a-time",
        request: firstRequest(),
        conversationID: callID,
      });
      const first = llm.stream(call("a"));
      await fake.request(0);
      const second = llm.stream(call("b"));
      assert.deepEqual(
        llm.health().map(({ inFlight, waiting }) => ({ inFlight, waiting })),
        [{ inFlight: 1, waiting: 1 }],
      );
      assert.equal(fake.requests.length, 1);
      first.abort("done with it");
      await fake.request(1);
      const events = await collect(second);
      assert.equal(events.at(-1)?.type, "done");
      assert.equal(llm.health()[0]?.inFlight, 0);
      assert.equal(llm.health()[0]?.state, "healthy");
    } finally {
      await fake.close();
    }
  });

  test("a model's failures are reported without the key", async () => {
    const fake = await startFakeProvider();
    const key = "sk-test-secret-key-1234567890abcdef";
    try {
      const llm = createLLM({
        models: createModelConfigs([
          { name: "m", api: "openai-compatible", model: "m", baseUrl: fake.url, apiKey: key },
        ]),
        retry: { maxAttempts: 1 },
      });
      fake.reply({
        type: "status",
        status: 401,
        body: `{"error":{"message":"invalid key ${key}"}}`,
      });
      await collect(
        llm.stream({ callID: "c", model: "m", request: firstRequest(), conversationID: "c" }),
      );
      const failure = llm.health()[0]?.lastFailure;
      assert.equal(failure?.kind, "other");
      assert.ok(failure !== undefined && failure !== null && !failure.message.includes(key));
      assert.equal(llm.health()[0]?.state, "failing");
    } finally {
      await fake.close();
    }
  });
});
