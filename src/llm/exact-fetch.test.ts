import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { createExactFetch, type ExactFetchOptions, hashBody } from "./exact-fetch.ts";
import { createRetryPolicy, DEFAULT_RETRY_POLICY } from "./retry.ts";
import { type FakeProvider, startFakeProvider } from "./testing/fake-provider.ts";
import { recordingSleep } from "./testing/streams.ts";

const BODY = '{"model":"m","messages":[{"role":"user","content":"hi"}]}';

let fake: FakeProvider;
before(async () => {
  fake = await startFakeProvider();
});
after(() => fake.close());

function exactFetch(overrides: Partial<ExactFetchOptions> = {}) {
  const { sleep, delays } = recordingSleep();
  const made = createExactFetch({
    callID: "call-1",
    model: "model-a",
    baseFetch: fetch,
    policy: createRetryPolicy({ sleep, random: () => 0 }),
    signal: new AbortController().signal,
    secrets: [],
    ...overrides,
  });
  return { ...made, delays };
}

const post = (body: string = BODY): RequestInit => ({
  method: "POST",
  headers: {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
  },
  body,
});

describe("exact fetch", { timeout: 10_000 }, () => {
  test("a connection failure before any response is retried with the same bytes", async () => {
    const first = fake.requests.length;
    fake.reply({ type: "reset" }, { type: "status", status: 200, body: "{}" });
    const { fetch: send, state, delays } = exactFetch();
    const response = await send(`${fake.url}/v1/x`, post());
    assert.equal(response.status, 200);
    assert.deepEqual(
      fake.requests.slice(first).map((r) => r.body),
      [BODY, BODY],
    );
    assert.deepEqual(delays, [1000]);
    assert.equal(state.attempts.length, 2);
    assert.equal(state.attempts[0]?.retryDelayMs, 1000);
    assert.ok(state.attempts[0]?.error !== undefined, "the failure is recorded");
    assert.deepEqual(state.attempts[1], { attempt: 2, status: 200 });
    assert.equal(state.exact?.bodyHash, hashBody(BODY));
  });

  test("a wait longer than allowed is not taken: the response is returned as is", async () => {
    fake.reply({ type: "status", status: 429, headers: { "retry-after": "3600" }, body: "{}" });
    const { fetch: send, state, delays } = exactFetch();
    const response = await send(`${fake.url}/v1/x`, post());
    assert.equal(response.status, 429);
    assert.deepEqual(delays, []);
    assert.deepEqual(state.attempts, [{ attempt: 1, status: 429 }]);
  });

  test("one call sends one request", async () => {
    fake.reply({ type: "status", status: 200, body: "{}" });
    const { fetch: send } = exactFetch();
    await send(`${fake.url}/v1/x`, post());
    await assert.rejects(send(`${fake.url}/v1/x`, post()), /second upstream request/);
  });

  test("a replayed body replaces the built one, content length included", async () => {
    // Not Latin-1: the length is the UTF-8 bytes, sent in one piece (not chunked).
    const saved = '{ "saved": "true…" }';
    const first = fake.requests.length;
    fake.reply({ type: "status", status: 200, body: "{}" });
    const { fetch: send, state } = exactFetch({ replayBody: saved });
    await send(`${fake.url}/v1/x`, post());
    const received = fake.requests[first];
    assert.equal(received?.body, saved);
    assert.equal(received?.headers["content-length"], String(Buffer.byteLength(saved)));
    assert.equal(received?.headers["transfer-encoding"], undefined);
    assert.equal(state.exact?.replayed, true);
  });

  test("abort during a retry wait stops at once, with nothing more sent", async () => {
    const controller = new AbortController();
    const first = fake.requests.length;
    fake.reply({ type: "status", status: 503, body: "{}" });
    const { fetch: send } = exactFetch({
      signal: controller.signal,
      // Real timers, a long wait: only the abort can end it.
      policy: createRetryPolicy({
        ...DEFAULT_RETRY_POLICY,
        baseDelayMs: 600_000,
        maxDelayMs: 600_000,
      }),
    });
    const pending = send(`${fake.url}/v1/x`, post());
    await fake.request(first);
    controller.abort();
    await assert.rejects(pending, { name: "AbortError" });
    assert.equal(fake.requests.length, first + 1);
  });

  test("abort while beforeSend is pending: nothing is sent", async () => {
    const controller = new AbortController();
    const first = fake.requests.length;
    let entered: () => void = () => undefined;
    const hookEntered = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const { fetch: send, state } = exactFetch({
      signal: controller.signal,
      beforeSend: () => {
        entered();
        return new Promise(() => undefined);
      },
    });
    const pending = send(`${fake.url}/v1/x`, post());
    await hookEntered;
    controller.abort();
    await assert.rejects(pending, { name: "AbortError" });
    assert.equal(fake.requests.length, first);
    assert.equal(state.hookFailure, undefined, "an abort is not a hook failure");
  });

  test("credentials in the URL are redacted from the exact request", async () => {
    fake.reply({ type: "status", status: 200, body: "{}" });
    const { fetch: send, state } = exactFetch({ secrets: ["key-abcdef123"] });
    await send(`${fake.url}/v1/x?key=key-abcdef123`, post());
    assert.equal(state.exact?.url, `${fake.url}/v1/x?key=[redacted]`);
  });

  test("a redirect is not followed: the call fails at once, with nothing sent elsewhere", async () => {
    const redirecting = createServer((request, response) => {
      request.resume();
      response.writeHead(307, { location: `${fake.url}/v1/elsewhere` }).end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = redirecting.address() as AddressInfo;
      const sentBefore = fake.requests.length;
      const { fetch: send, state, delays } = exactFetch();
      await assert.rejects(send(`http://127.0.0.1:${port}/v1/x`, post()), /redirect/);
      assert.equal(fake.requests.length, sentBefore);
      assert.equal(state.attempts.length, 1);
      assert.deepEqual(delays, []);
    } finally {
      redirecting.close();
    }
  });

  test("only string bodies are accepted", async () => {
    const { fetch: send } = exactFetch();
    await assert.rejects(
      send(`${fake.url}/v1/x`, { method: "POST", body: new Uint8Array([1]) }),
      /string body/,
    );
  });
});
