/**
 * The ordered outbound messages of one agent stream (one request id), kept as a backlog so that a
 * RunSSE that connects late or reconnects resumes where the previous connection left off
 * (docs/design.md §6, docs/protocol.md §1.4).
 *
 * - Everything the server sends for the stream goes through `push`, in order; one writer.
 * - One subscriber at a time: a new `subscribe` (an async generator, what Connect reads) or
 *   `read` (a pull reader, what the direct RunSSE responder writes from: no generator and no
 *   promise per message) takes over from the previous one, which ends. Both are one
 *   implementation: the generator is a loop over a reader.
 * - A message counts as delivered once the subscriber's consumer asks for the one after it (the
 *   transport has written it). A connection that drops while a message is being written leaves
 *   that message undelivered, and the next subscriber gets it again.
 * - While nothing is sent for `heartbeatMs`, the subscriber yields `heartbeat()` (not backlogged).
 * - `end(error?)` finishes the stream once the backlog is drained; a subscriber then completes,
 *   or throws `error`.
 * - Delivered messages are released, so a long turn holds only what is still to be sent.
 * - With `join`, a message pushed while the one before it still waits (no subscriber has been
 *   handed it yet) may be joined with it (adjacent deltas, issue #19): the backlog then holds one
 *   message standing for both, which is handed out, delivered or sent again as one. Joining when
 *   the message is pushed, rather than when the subscriber reads, keeps a slow subscriber's
 *   backlog at one message per run of deltas, not one per delta (heap, GC, the scan).
 * - `hold()` (a graceful shutdown, server.ts `close`): the stream's turn goes on after the
 *   restart or on another instance, so nothing more of it is handed to any subscriber of this
 *   process, not even its end: a reader is then done and `held`, and its transport drops the
 *   connection without an end of stream, so the client reconnects (docs/architecture.md
 *   "Shutdown"). A stream that has ended is not held: its subscriber still gets its end.
 */
import { withGetters } from "../llm/index.ts";

export interface OutboundStream<T> {
  push(message: T): void;
  end(error?: unknown): void;
  /**
   * `onDetach` runs when this subscriber's reading ends (it finished, was taken over, aborted or
   * returned), after it stopped counting as `subscribed`: callers hook in without wrapping the
   * generator in one of their own (one layer less per message, issue #19). When the stream is
   * held, the generator awaits `onHeld` (the transport's: it marks the response held and
   * resolves once the connection has closed, stream-responses.ts) and then returns; a caller
   * whose transport would write a clean end when the generator returns must pass it.
   */
  subscribe(
    signal?: AbortSignal,
    onDetach?: () => void,
    onHeld?: () => Promise<void>,
  ): AsyncGenerator<T, void, undefined>;
  /**
   * The same subscription as `subscribe`, as a pull reader for a transport that writes each
   * message itself (the direct RunSSE responder, run-sse-response.ts): no generator and no
   * promise per message, a promise only when there is nothing to send. Takes over at once.
   */
  read(signal?: AbortSignal, onDetach?: () => void): OutboundReader<T>;
  /**
   * Shutdown: hands nothing more out, ever, not even the end (see the file comment); every
   * reader, now or later, is done and `held`. No effect on a stream that has ended.
   */
  hold(): void;
  readonly ended: boolean;
  /** Whether `hold` took effect. */
  readonly held: boolean;
  /** Messages backlogged so far (a push joined with the message before it adds none). */
  readonly length: number;
  /** Messages handed to a subscriber and written. */
  readonly delivered: number;
  /** Messages still held in memory: the undelivered ones (delivered ones are released at once). */
  readonly retained: number;
  /** True while a subscriber is attached. */
  readonly subscribed: boolean;
}

/**
 * One subscriber's reading, pulled by its writer:
 *
 * ```ts
 * for (;;) {
 *   const message = reader.next();
 *   if (message !== undefined) { write(message); continue; } // (awaiting backpressure)
 *   if (reader.done) break; // then `reader.error`
 *   await reader.wait();
 * }
 * reader.close();
 * ```
 */
export interface OutboundReader<T> {
  /**
   * The next message to write, or `undefined` when there is none now (then see `done`). Calling
   * it counts the message the previous call returned as delivered: the writer asks for the next
   * one only once it has written that one. A heartbeat comes from here after `wait` ended in
   * `heartbeatMs` of silence.
   */
  next(): T | undefined;
  /**
   * Whether the reading is over (`next` gave `undefined`): the stream ended and its backlog was
   * written, or this reader was taken over, aborted or closed.
   */
  readonly done: boolean;
  /** Once `done`: the error the stream ended with, if it ended with one. */
  readonly error: unknown;
  /**
   * Once `done`: the stream was held (shutdown). The writer writes nothing more, no end of
   * stream either, and leaves the connection to be dropped (server.ts `close`).
   */
  readonly held: boolean;
  /** Resolves when `next` may have something: a push, the end, a takeover, abort, `close`, a heartbeat due. */
  wait(): Promise<void>;
  /**
   * Stops reading (the message `next` returned last stays undelivered) and runs `onDetach`
   * once; also wakes a pending `wait`. Idempotent.
   */
  close(): void;
}

export interface OutboundStreamOptions<T> {
  readonly heartbeatMs: number;
  readonly heartbeat: () => T;
  /**
   * The one message standing for `last` (waiting, not handed out yet) and `message` pushed right
   * after it, or undefined to keep them apart. Absent: nothing is joined.
   */
  readonly join?: (last: T, message: T) => T | undefined;
}

export function createOutboundStream<T>(options: OutboundStreamOptions<T>): OutboundStream<T> {
  /**
   * Messages from number `base` on. A delivered message's slot is emptied at once, so the message
   * can be collected while it is young (a stream that sends a message a second would otherwise
   * carry up to 256 written messages into the old generation, issue #19); the slots themselves
   * are dropped in batches.
   */
  let backlog: (T | undefined)[] = [];
  let base = 0;
  let delivered = 0;
  /** Messages from this number on were never handed to a subscriber: `push` may join them. */
  let handed = 0;
  let ended = false;
  let endError: unknown;
  let held = false;
  let generation = 0;
  let active = 0;
  const waiters = new Set<() => void>();

  const changed = (): void => {
    // Most pushes find the subscriber busy writing: nothing to wake, nothing to allocate.
    if (waiters.size === 0) return;
    // Each waiter removes itself and only schedules its reader's continuation.
    for (const wake of waiters) wake();
  };

  /** The oldest undelivered message was written, and is never sent again: let it go. */
  const markDelivered = (): void => {
    backlog[delivered - base] = undefined;
    delivered += 1;
    const done = delivered - base;
    if (done >= 256 && done * 2 >= backlog.length) {
      backlog = backlog.slice(done);
      base = delivered;
    }
  };

  /** A reader for subscription `mine` (the generation it took over as). */
  function attach(mine: number, signal?: AbortSignal, onDetach?: () => void): OutboundReader<T> {
    active += 1;
    /** Whether the message `next` returned last is still to be counted as delivered. */
    let handedOut = false;
    let heartbeatDue = false;
    let closed = false;
    let resume: (() => void) | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const wake = (): void => {
      if (resume === null) return;
      const resolve = resume;
      resume = null;
      clearTimeout(timer);
      waiters.delete(wake);
      resolve();
    };
    const onHeartbeat = (): void => {
      heartbeatDue = true;
      wake();
    };
    signal?.addEventListener("abort", wake, { once: true });
    // `done` and `error` are data members this reader sets itself: accessors in a literal made
    // per subscriber would put each reader in dictionary mode (issue #19, with-getters.ts).
    const reader: { -readonly [K in keyof OutboundReader<T>]: OutboundReader<T>[K] } = {
      done: false,
      error: undefined,
      held: false,
      next() {
        if (reader.done) return undefined;
        if (closed || mine !== generation) {
          // Taken over: the message being written goes to the new subscriber.
          reader.done = true;
          return undefined;
        }
        if (handedOut) {
          markDelivered();
          handedOut = false;
        }
        if (signal?.aborted) {
          reader.done = true;
          return undefined;
        }
        if (held) {
          reader.done = true;
          reader.held = true;
          return undefined;
        }
        if (delivered < base + backlog.length) {
          handedOut = true;
          if (handed <= delivered) handed = delivered + 1;
          return backlog[delivered - base] as T;
        }
        if (heartbeatDue) {
          heartbeatDue = false;
          return options.heartbeat();
        }
        if (ended) {
          reader.done = true;
          reader.error = endError;
        }
        return undefined;
      },
      wait() {
        if (closed || mine !== generation || signal?.aborted || ended || held) {
          return Promise.resolve();
        }
        if (delivered < base + backlog.length) return Promise.resolve();
        return new Promise<void>((resolve) => {
          resume = resolve;
          waiters.add(wake);
          timer = setTimeout(onHeartbeat, options.heartbeatMs);
        });
      },
      close() {
        if (closed) return;
        closed = true;
        reader.done = true;
        wake();
        signal?.removeEventListener("abort", wake);
        active -= 1;
        onDetach?.();
      },
    };
    return reader;
  }

  async function* run(
    mine: number,
    signal?: AbortSignal,
    onDetach?: () => void,
    onHeld?: () => Promise<void>,
  ): AsyncGenerator<T, void, undefined> {
    const reader = attach(mine, signal, onDetach);
    try {
      for (;;) {
        const message = reader.next();
        if (message !== undefined) {
          yield message;
          continue;
        }
        if (reader.done) {
          // Held: returning at once would let the transport write a clean end; `onHeld`
          // resolves once the connection is gone, when nothing can be written any more.
          if (reader.held) return await onHeld?.();
          if (reader.error !== undefined) throw reader.error;
          return;
        }
        await reader.wait();
      }
    } finally {
      reader.close();
    }
  }

  // The derived members are accessors that do not put each stream in dictionary mode (issue #19).
  const stream: Omit<
    OutboundStream<T>,
    "ended" | "held" | "length" | "delivered" | "retained" | "subscribed"
  > = {
    push(message) {
      if (ended) throw new Error("push after end");
      const last = backlog.length - 1;
      if (options.join !== undefined && last >= 0 && base + last >= handed) {
        const joined = options.join(backlog[last] as T, message);
        if (joined !== undefined) {
          backlog[last] = joined;
          return;
        }
      }
      backlog.push(message);
      changed();
    },
    end(error) {
      if (ended) return;
      ended = true;
      endError = error;
      changed();
    },
    subscribe(signal, onDetach, onHeld) {
      // Take over at once, not when the new subscriber first pulls.
      generation += 1;
      changed();
      return run(generation, signal, onDetach, onHeld);
    },
    read(signal, onDetach) {
      generation += 1;
      changed();
      return attach(generation, signal, onDetach);
    },
    hold() {
      if (ended || held) return;
      held = true;
      changed();
    },
  };
  return withGetters(stream, {
    ended: () => ended,
    held: () => held,
    length: () => base + backlog.length,
    delivered: () => delivered,
    retained: () => base + backlog.length - delivered,
    subscribed: () => active > 0,
  });
}
