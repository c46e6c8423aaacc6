/**
 * When and how long to wait before sending a model request again (docs/design.md §8).
 *
 * A request is retried only before the provider answered with a usable response: on HTTP 408,
 * 425, 429 and 5xx, and on connection failures. The wait is the provider's `Retry-After`
 * (`retry-after-ms`, seconds, or an HTTP date) when it gives one, otherwise exponential backoff
 * with jitter. A provider that asks for longer than `maxRetryAfterMs` is not retried: the
 * failure is reported instead of holding the turn for minutes. Attempts are bounded by
 * `maxAttempts`. The caller sends the byte-identical body every time (exact-fetch.ts).
 *
 * Time is injected (`sleep`, `now`, `random`) so tests run without real waits.
 */
import { setTimeout as delay } from "node:timers/promises";

export interface RetryPolicy {
  /** Total attempts, the first included. 1 disables retries. */
  readonly maxAttempts: number;
  /** Backoff before the first retry; doubles per retry. */
  readonly baseDelayMs: number;
  /** Cap of the computed backoff. */
  readonly maxDelayMs: number;
  /** Longest provider-requested wait we honour; a longer one ends retrying. */
  readonly maxRetryAfterMs: number;
  /** Waits `ms`; rejects when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Jitter source in [0, 1). */
  readonly random: () => number;
  /** Epoch milliseconds, for `Retry-After` dates. */
  readonly now: () => number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 1_000,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 60_000,
  sleep: (ms, signal) => delay(ms, undefined, { signal }),
  random: Math.random,
  now: Date.now,
};

export function createRetryPolicy(overrides: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY_POLICY, ...overrides };
  if (!Number.isSafeInteger(policy.maxAttempts) || policy.maxAttempts < 1) {
    throw new RangeError("retry policy: maxAttempts must be a positive integer");
  }
  for (const key of ["baseDelayMs", "maxDelayMs", "maxRetryAfterMs"] as const) {
    if (!Number.isFinite(policy[key]) || policy[key] < 0) {
      throw new RangeError(`retry policy: ${key} must be a non-negative number`);
    }
  }
  return policy;
}

/** HTTP statuses that mean "try again later": timeout, too early, rate limit, server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || (status >= 500 && status <= 599);
}

/** The wait a response asks for, in milliseconds, or `undefined` when it asks for none. */
export function parseRetryAfter(headers: Headers, now: number): number | undefined {
  const milliseconds = headers.get("retry-after-ms");
  if (milliseconds !== null && /^\s*\d+(\.\d+)?\s*$/.test(milliseconds)) {
    return Math.ceil(Number(milliseconds));
  }
  const value = headers.get("retry-after");
  if (value === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.ceil(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Exponential backoff for the retry after attempt `attempt` (1-based), with up to 25% jitter. */
export function backoffDelay(policy: RetryPolicy, attempt: number): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(exponential * (1 - 0.25 * policy.random()));
}

/** What one attempt produced: a response status (with its headers) or a connection failure. */
export type AttemptOutcome =
  | { readonly type: "response"; readonly status: number; readonly headers: Headers }
  | { readonly type: "connection_error" };

export type RetryDecision =
  | { readonly type: "retry"; readonly delayMs: number }
  | { readonly type: "stop" };

/** Whether to send again after attempt `attempt` (1-based) ended with `outcome`. */
export function decideRetry(
  policy: RetryPolicy,
  attempt: number,
  outcome: AttemptOutcome,
): RetryDecision {
  if (attempt >= policy.maxAttempts) return { type: "stop" };
  if (outcome.type === "connection_error") {
    return { type: "retry", delayMs: backoffDelay(policy, attempt) };
  }
  if (!isRetryableStatus(outcome.status)) return { type: "stop" };
  const requested = parseRetryAfter(outcome.headers, policy.now());
  if (requested === undefined) return { type: "retry", delayMs: backoffDelay(policy, attempt) };
  if (requested > policy.maxRetryAfterMs) return { type: "stop" };
  return { type: "retry", delayMs: requested };
}
