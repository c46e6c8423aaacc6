/**
 * The ordered outbound messages of one agent stream (one request id), kept as a backlog so that a
 * RunSSE that connects late or reconnects resumes where the previous connection left off
 * (docs/design.md §6, docs/protocol.md §1.4).
 *
 * - Everything the server sends for the stream goes through `push`, in order; one writer.
 * - One subscriber at a time: a new `subscribe` takes over from the previous one, which ends.
 * - A message counts as delivered once the subscriber's consumer asks for the one after it (the
 *   transport has written it). A connection that drops while a message is being written leaves
 *   that message undelivered, and the next subscriber gets it again.
 * - While nothing is sent for `heartbeatMs`, the subscriber yields `heartbeat()` (not backlogged).
 * - `end(error?)` finishes the stream once the backlog is drained; a subscriber then completes,
 *   or throws `error`.
 * - Delivered messages are released, so a long turn holds only what is still to be sent.
 * - With `coalesce`, the messages waiting when the subscriber asks for the next one may be handed
 *   out as one (adjacent deltas joined, issue #19): they then count as delivered together, and a
 *   connection that drops while it is written leaves all of them undelivered.
 */
export interface OutboundStream<T> {
  push(message: T): void;
  end(error?: unknown): void;
  /**
   * `onDetach` runs when this subscriber's reading ends (it finished, was taken over, aborted or
   * returned), after it stopped counting as `subscribed`: callers hook in without wrapping the
   * generator in one of their own (one layer less per message, issue #19).
   */
  subscribe(signal?: AbortSignal, onDetach?: () => void): AsyncGenerator<T, void, undefined>;
  readonly ended: boolean;
  /** Messages pushed so far. */
  readonly length: number;
  /** Messages handed to a subscriber and written. */
  readonly delivered: number;
  /** Messages still held in memory (the undelivered ones, and some delivered not yet released). */
  readonly retained: number;
  /** True while a subscriber is attached. */
  readonly subscribed: boolean;
}

export interface OutboundStreamOptions<T> {
  readonly heartbeatMs: number;
  readonly heartbeat: () => T;
  /**
   * The message to hand out for `pending[start]` and how many pending messages (at least 1) it
   * stands for. Absent: one message at a time.
   */
  readonly coalesce?: (
    pending: readonly T[],
    start: number,
  ) => { readonly message: T; readonly count: number };
}

export function createOutboundStream<T>(options: OutboundStreamOptions<T>): OutboundStream<T> {
  /** Messages from number `base` on; delivered ones are released in batches. */
  let backlog: T[] = [];
  let base = 0;
  let delivered = 0;
  let ended = false;
  let endError: unknown;
  let generation = 0;
  let active = 0;
  const waiters = new Set<() => void>();

  const changed = (): void => {
    // Most pushes find the subscriber busy writing: nothing to wake, nothing to allocate.
    if (waiters.size === 0) return;
    const notify = [...waiters];
    waiters.clear();
    for (const wake of notify) wake();
  };

  /** Resolves on the next push/end/takeover, on abort, or after `ms` (then `true`). */
  const waitForChange = (ms: number, signal?: AbortSignal): Promise<boolean> =>
    new Promise((resolve) => {
      const done = (timedOut: boolean) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        waiters.delete(wake);
        resolve(timedOut);
      };
      const wake = () => done(false);
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(true), ms);
      signal?.addEventListener("abort", onAbort, { once: true });
      waiters.add(wake);
    });

  /** Delivered messages are never sent again: let them go. */
  const markDelivered = (count: number): void => {
    delivered += count;
    const done = delivered - base;
    if (done >= 256 && done * 2 >= backlog.length) {
      backlog = backlog.slice(done);
      base = delivered;
    }
  };

  async function* run(
    mine: number,
    signal?: AbortSignal,
    onDetach?: () => void,
  ): AsyncGenerator<T, void, undefined> {
    active += 1;
    try {
      while (mine === generation && !signal?.aborted) {
        if (delivered < base + backlog.length) {
          const next =
            options.coalesce === undefined
              ? { message: backlog[delivered - base] as T, count: 1 }
              : options.coalesce(backlog, delivered - base);
          yield next.message;
          if (mine !== generation) return;
          markDelivered(next.count);
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
      onDetach?.();
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
    subscribe(signal, onDetach) {
      // Take over at once, not when the new subscriber first pulls.
      generation += 1;
      changed();
      return run(generation, signal, onDetach);
    },
    get ended() {
      return ended;
    },
    get length() {
      return base + backlog.length;
    },
    get delivered() {
      return delivered;
    },
    get retained() {
      return backlog.length;
    },
    get subscribed() {
      return active > 0;
    },
  };
}
