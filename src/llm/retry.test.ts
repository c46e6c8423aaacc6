import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  backoffDelay,
  createRetryPolicy,
  decideRetry,
  isRetryableStatus,
  parseRetryAfter,
} from "./retry.ts";

const NOW = Date.parse("2026-01-01T00:00:00Z");
const policy = createRetryPolicy({ random: () => 0, now: () => NOW });

function response(status: number, headers: Record<string, string> = {}) {
  return { type: "response", status, headers: new Headers(headers) } as const;
}

describe("retry policy", () => {
  test("retryable statuses are 408, 425, 429 and 5xx only", () => {
    const retryable = [408, 425, 429, 500, 502, 503, 504, 529, 599];
    const final = [200, 301, 400, 401, 403, 404, 409, 413, 422, 600];
    for (const status of retryable) assert.equal(isRetryableStatus(status), true, String(status));
    for (const status of final) assert.equal(isRetryableStatus(status), false, String(status));
  });

  test("Retry-After in seconds, milliseconds and as an HTTP date", () => {
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "2" }), NOW), 2000);
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "1.5" }), NOW), 1500);
    assert.equal(
      parseRetryAfter(new Headers({ "retry-after-ms": "250", "retry-after": "9" }), NOW),
      250,
    );
    const date = new Date(NOW + 7000).toUTCString();
    assert.equal(parseRetryAfter(new Headers({ "retry-after": date }), NOW), 7000);
    assert.equal(
      parseRetryAfter(new Headers({ "retry-after": new Date(NOW - 5000).toUTCString() }), NOW),
      0,
    );
    assert.equal(parseRetryAfter(new Headers({ "retry-after": "soon" }), NOW), undefined);
    assert.equal(parseRetryAfter(new Headers(), NOW), undefined);
  });

  test("the provider's wait is honoured; a longer wait than allowed stops retrying", () => {
    assert.deepEqual(decideRetry(policy, 1, response(429, { "retry-after": "3" })), {
      type: "retry",
      delayMs: 3000,
    });
    assert.deepEqual(decideRetry(policy, 1, response(503, { "retry-after": "3600" })), {
      type: "stop",
    });
  });

  test("without Retry-After: exponential backoff, capped", () => {
    assert.deepEqual(
      [1, 2, 3].map((attempt) => decideRetry(policy, attempt, response(500))),
      [1000, 2000, 4000].map((delayMs) => ({ type: "retry", delayMs })),
    );
    const capped = createRetryPolicy({ random: () => 0, maxDelayMs: 5000, maxAttempts: 10 });
    assert.equal(backoffDelay(capped, 8), 5000);
  });

  test("connection failures are retried; final statuses and the last attempt are not", () => {
    assert.equal(decideRetry(policy, 1, { type: "connection_error" }).type, "retry");
    assert.equal(decideRetry(policy, 1, response(400)).type, "stop");
    assert.equal(decideRetry(policy, 1, response(200)).type, "stop");
    assert.equal(decideRetry(policy, policy.maxAttempts, response(503)).type, "stop");
    assert.equal(
      decideRetry(policy, policy.maxAttempts, { type: "connection_error" }).type,
      "stop",
    );
  });

  test("jitter only shortens the wait, by at most a quarter", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.integer({ min: 1, max: 6 }),
        (random, attempt) => {
          const jittered = backoffDelay(createRetryPolicy({ random: () => random }), attempt);
          const full = backoffDelay(createRetryPolicy({ random: () => 0 }), attempt);
          assert.ok(jittered <= full && jittered >= Math.floor(full * 0.75));
        },
      ),
    );
  });

  test("invalid policies are refused", () => {
    assert.throws(() => createRetryPolicy({ maxAttempts: 0 }), RangeError);
    assert.throws(() => createRetryPolicy({ baseDelayMs: -1 }), RangeError);
  });
});
