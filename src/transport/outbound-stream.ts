/**
 * The ordered outbound messages of one agent stream (one request id), kept as a backlog so that a
 * RunSSE that connects late or reconnects resumes where the previous connection left off
 * (DESIGN §6, cursor-protocol.md §1.4).
 *
 * - Everything the server sends for the stream goes through `push`, in order; one writer.
 * - One subscriber at a time: a new `subscribe` takes over from the previous one, which ends.
 * - A message counts as delivered once the subscriber's consumer asks for the one after it (the
 *   transport has written it). A connection that drops while a message is being written leaves
 *   that message undelivered, and the next subscriber gets it again.
 * - While nothing is sent for `heartbeatMs`, the subscriber yields `heartbeat()` (not backlogged).
 * - `end(error?)` finishes the stream once the backlog is drained; a subscriber then completes,
 *   or throws `error`.
 */
export interface OutboundStream<T> {
  push(message: T): void;
  end(error?: unknown): void;
  subscribe(signal?: AbortSignal): AsyncGenerator<T, void, undefined>;
  readonly ended: boolean;
  /** Messages pushed so far. */
  readonly length: number;
  /** Messages handed to a subscriber and written. */
  readonly delivered: number;
  /** True while a subscriber is attached. */
  readonly subscribed: boolean;
}

export interface OutboundStreamOptions<T> {
  readonly heartbeatMs: number;
  readonly heartbeat: () => T;
}

export function createOutboundStream<T>(options: OutboundStreamOptions<T>): OutboundStream<T> {
  const backlog: T[] = [];
  let delivered = 0;
  let ended = false;
  let endError: unknown;
  let generation = 0;
  let active = 0;
  let wake: () => void = () => {};

  const changed = (): void => {
    const notify = wake;
    wake = () => {};
    notify();
  };

  /** Resolves on the next push/end/takeover, on abort, or after `ms` (then `true`). */
  const waitForChange = (ms: number, signal?: AbortSignal): Promise<boolean> =>
    new Promise((resolve) => {
      const done = (timedOut: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve(timedOut);
      };
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(true), ms);
      signal?.addEventListener("abort", onAbort, { once: true });
      const previous = wake;
      wake = () => {
        previous();
        done(false);
      };
    });

  async function* run(mine: number, signal?: AbortSignal): AsyncGenerator<T, void, undefined> {
    active += 1;
    try {
      while (mine === generation && !signal?.aborted) {
        if (delivered < backlog.length) {
          const message = backlog[delivered] as T;
          yield message;
          if (mine !== generation) return;
          delivered += 1;
          continue;
        }
        if (ended) {
          if (endError !== undefined) throw endError;
          return;
        }
        const idle = await waitForChange(options.heartbeatMs, signal);
        if (idle && mine === generation && !signal?.aborted) yield options.heartbeat();
      }
    } finally {
      active -= 1;
    }
  }

  return {
    push(message) {
      if (ended) throw new Error("push after end");
      backlog.push(message);
      changed();
    },
    end(error) {
      if (ended) return;
      ended = true;
      endError = error;
      changed();
    },
    subscribe(signal) {
      // Take over at once, not when the new subscriber first pulls.
      generation += 1;
      changed();
      return run(generation, signal);
    },
    get ended() {
      return ended;
    },
    get length() {
      return backlog.length;
    },
    get delivered() {
      return delivered;
    },
    get subscribed() {
      return active > 0;
    },
  };
}
