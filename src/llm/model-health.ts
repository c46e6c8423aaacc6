/**
 * The health of each configured model, kept by the LLM layer for all conversations of the
 * process (README "Model routing"):
 *
 * - **Concurrency**: a model with `maxConcurrent` runs at most that many calls at once; further
 *   calls wait, first come first served, for a free slot (an abort ends the wait). A busy provider
 *   then sees a steady load instead of every conversation's calls at once.
 * - **Cool-down**: after `cooldownAfter429s` rate-limit responses in a row (retries included;
 *   a call that produces a token resets the count) the model is not called for `cooldownMs`:
 *   calls fail at once with a `cooling_down` failure, which the loop treats like a 429 (the call
 *   moves to a fallback). The first call after the cool-down goes through.
 * - **Report**: `snapshot()` for `cursor-byok models` and the dashboard: state, calls in flight
 *   and waiting, the last failure (its message as the caller saw it: without secrets).
 *
 * Which model a conversation uses is not decided here: that is the loop's (model-route.ts).
 */
import { COOLING_DOWN_PREFIX } from "./failure-kind.ts";
import type { FailureKind } from "./types.ts";

export interface HealthPolicy {
  /** Rate-limit responses in a row after which a model cools down. */
  readonly cooldownAfter429s: number;
  /** How long a cool-down lasts, in milliseconds. */
  readonly cooldownMs: number;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

export const DEFAULT_HEALTH_POLICY: HealthPolicy = {
  cooldownAfter429s: 3,
  cooldownMs: 60_000,
  now: Date.now,
};

/**
 * `healthy`: no failure since the last success (or no call yet); `failing`: the last call
 * failed; `cooling_down`: refused until `coolingDownUntil`.
 */
export type HealthState = "healthy" | "failing" | "cooling_down";

export interface ModelHealthInfo {
  readonly name: string;
  readonly state: HealthState;
  readonly inFlight: number;
  readonly waiting: number;
  readonly maxConcurrent: number | null;
  readonly rateLimitsInARow: number;
  /** Epoch milliseconds, while cooling down. */
  readonly coolingDownUntil: number | null;
  readonly lastFailure: {
    readonly kind: FailureKind;
    readonly message: string;
    readonly at: number;
  } | null;
  readonly lastSuccessAt: number | null;
}

export interface ModelHealth {
  /** Null when `model` may be called now; otherwise the error message of the refusal. */
  refusal(model: string): string | null;
  /**
   * Waits for a call slot of `model`; resolves with its release, rejects when `signal` aborts.
   * `onQueued` is called (synchronously) when no slot is free and the call joins the queue.
   */
  acquire(model: string, signal: AbortSignal, onQueued?: () => void): Promise<() => void>;
  /** A call of `model` produced its first token (or a complete response). */
  succeeded(model: string): void;
  /** A call of `model` failed; `rateLimits`: the 429 responses it got, retries included. */
  failed(model: string, kind: FailureKind, message: string, rateLimits: number): void;
  snapshot(): readonly ModelHealthInfo[];
}

interface Entry {
  readonly name: string;
  readonly maxConcurrent: number | null;
  inFlight: number;
  readonly waiters: (() => void)[];
  rateLimitsInARow: number;
  coolingDownUntil: number | null;
  lastFailure: ModelHealthInfo["lastFailure"];
  lastSuccessAt: number | null;
}

export function createModelHealth(
  models: readonly { readonly name: string; readonly maxConcurrent?: number }[],
  overrides: Partial<HealthPolicy> = {},
): ModelHealth {
  const policy = { ...DEFAULT_HEALTH_POLICY, ...overrides };
  const entries = new Map<string, Entry>(
    models.map((model) => [
      model.name,
      {
        name: model.name,
        maxConcurrent: model.maxConcurrent ?? null,
        inFlight: 0,
        waiters: [],
        rateLimitsInARow: 0,
        coolingDownUntil: null,
        lastFailure: null,
        lastSuccessAt: null,
      },
    ]),
  );

  const coolingUntil = (entry: Entry): number | null => {
    if (entry.coolingDownUntil !== null && policy.now() >= entry.coolingDownUntil) {
      entry.coolingDownUntil = null;
    }
    return entry.coolingDownUntil;
  };

  const release = (entry: Entry): (() => void) => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = entry.waiters.shift();
      if (next === undefined) entry.inFlight -= 1;
      else next(); // the slot passes to the next waiter
    };
  };

  return {
    refusal(model) {
      const entry = entries.get(model);
      const until = entry === undefined ? null : coolingUntil(entry);
      if (entry === undefined || until === null) return null;
      const seconds = Math.max(1, Math.ceil((until - policy.now()) / 1000));
      return (
        `${COOLING_DOWN_PREFIX} model "${model}" got ${policy.cooldownAfter429s} or more ` +
        `rate-limit responses in a row and is not called for another ${seconds} s`
      );
    },

    acquire(model, signal, onQueued) {
      const entry = entries.get(model);
      if (entry === undefined) return Promise.resolve(() => undefined);
      if (entry.maxConcurrent === null || entry.inFlight < entry.maxConcurrent) {
        entry.inFlight += 1;
        return Promise.resolve(release(entry));
      }
      return new Promise((resolve, reject) => {
        if (signal.aborted) {
          reject(signal.reason);
          return;
        }
        const granted = () => {
          signal.removeEventListener("abort", onAbort);
          resolve(release(entry));
        };
        const onAbort = () => {
          const index = entry.waiters.indexOf(granted);
          if (index >= 0) entry.waiters.splice(index, 1);
          reject(signal.reason);
        };
        signal.addEventListener("abort", onAbort, { once: true });
        entry.waiters.push(granted);
        onQueued?.();
      });
    },

    succeeded(model) {
      const entry = entries.get(model);
      if (entry === undefined) return;
      entry.rateLimitsInARow = 0;
      entry.lastSuccessAt = policy.now();
    },

    failed(model, kind, message, rateLimits) {
      const entry = entries.get(model);
      if (entry === undefined || kind === "cooling_down") return;
      const at = policy.now();
      entry.lastFailure = { kind, message, at };
      entry.rateLimitsInARow += rateLimits;
      if (entry.rateLimitsInARow >= policy.cooldownAfter429s) {
        entry.coolingDownUntil = at + policy.cooldownMs;
        entry.rateLimitsInARow = 0;
      }
    },

    snapshot() {
      return [...entries.values()].map((entry): ModelHealthInfo => {
        const until = coolingUntil(entry);
        const failing =
          entry.lastFailure !== null &&
          (entry.lastSuccessAt === null || entry.lastSuccessAt < entry.lastFailure.at);
        return {
          name: entry.name,
          state: until !== null ? "cooling_down" : failing ? "failing" : "healthy",
          inFlight: entry.inFlight,
          waiting: entry.waiters.length,
          maxConcurrent: entry.maxConcurrent,
          rateLimitsInARow: entry.rateLimitsInARow,
          coolingDownUntil: until,
          lastFailure: entry.lastFailure,
          lastSuccessAt: entry.lastSuccessAt,
        };
      });
    },
  };
}
