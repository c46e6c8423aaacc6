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
import { withMethods } from "../llm/index.ts";

/**
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
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
 *
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
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
   * For a writer that has just written what `next` gave: resolves in the event loop's check
   * phase (once the promise jobs queued before it have run) if `next` has something by then,
   * else as `wait` does. Until the check phase a push does not wake it, so the rest of a burst
   * pushed in one chain of promise jobs is joined (`join`) and read as one message. The same as
   * awaiting `setImmediate` and then `wait`, with one promise instead of two (issue #19).
   */
  waitForMore(): Promise<void>;
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

/**
 * One stream: a plain record of its state, whose prototype is `streamMethods`, shared by every
 * stream (issue #19: a factory of closures made ≈ 20 closures and their contexts per open stream
 * and subscriber). `ended`, `held` and `delivered` are its own data members, kept by the methods;
 * `length`, `retained` and `subscribed` are accessors on the prototype.
 */
interface Stream<T> {
  readonly options: OutboundStreamOptions<T>;
  /**
   * Messages from number `base` on. A delivered message's slot is emptied at once, so the message
   * can be collected while it is young (a stream that sends a message a second would otherwise
   * carry up to 256 written messages into the old generation, issue #19); the slots themselves
   * are dropped in batches.
   */
  backlog: (T | undefined)[];
  base: number;
  delivered: number;
  /** Messages from this number on were never handed to a subscriber: `push` may join them. */
  handed: number;
  ended: boolean;
  endError: unknown;
  held: boolean;
  /** The current subscription's number: a reader of an older one has been taken over. */
  generation: number;
  /** Readers attached and not closed. */
  active: number;
  /**
   * Readers waiting for a push (`awaitPush`), in no order; made at the first wait. An array,
   * taken from by swapping with the last: a Set's table is made anew each time it empties,
   * a live allocation per paced message of every open stream (issue #19).
   */
  waiters: Reader<T>[] | undefined;
}

/** One subscriber's reader: a plain record, its prototype `readerMethods` (as a stream's). */
interface Reader<T> {
  done: boolean;
  error: unknown;
  held: boolean;
  readonly stream: Stream<T>;
  /** The generation it took over as. */
  readonly mine: number;
  readonly signal: AbortSignal | undefined;
  readonly onDetach: (() => void) | undefined;
  /**
   * Its listener on `signal` (wakes its `wait`), kept for `removeEventListener`. A closure: the
   * reader as its own listener (`handleEvent`) would save nothing, as Node wraps an object
   * listener in a closure of its own (internal/event_target.js `Listener`).
   */
  readonly onAbort: (() => void) | undefined;
  /** Whether the message `next` returned last is still to be counted as delivered. */
  handedOut: boolean;
  heartbeatDue: boolean;
  closed: boolean;
  /** Resolves the pending `wait`. */
  resume: (() => void) | null;
  /** Whether it is among its stream's `waiters` (a wait for a push or the heartbeat). */
  waiting: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
}

export function createOutboundStream<T>(options: OutboundStreamOptions<T>): OutboundStream<T> {
  const stream: Stream<T> = {
    options,
    backlog: [],
    base: 0,
    delivered: 0,
    handed: 0,
    ended: false,
    endError: undefined,
    held: false,
    generation: 0,
    active: 0,
    waiters: undefined,
  };
  // The shared methods are typed for `unknown` messages: `T` is erased there.
  return withMethods(stream, streamMethods) as OutboundStream<T>;
}

/** The public members, shared by every stream (`this` is the stream's record). */
const streamMethods: Omit<OutboundStream<unknown>, "ended" | "held" | "delivered"> &
  ThisType<Stream<unknown>> = {
  push(message) {
    if (this.ended) throw new Error("push after end");
    const backlog = this.backlog;
    const last = backlog.length - 1;
    const join = this.options.join;
    if (join !== undefined && last >= 0 && this.base + last >= this.handed) {
      const joined = join(backlog[last], message);
      if (joined !== undefined) {
        backlog[last] = joined;
        return;
      }
    }
    backlog.push(message);
    changed(this);
  },
  end(error) {
    if (this.ended) return;
    this.ended = true;
    this.endError = error;
    changed(this);
  },
  subscribe(signal, onDetach, onHeld) {
    // Take over at once, not when the new subscriber first pulls.
    this.generation += 1;
    changed(this);
    return run(this, this.generation, signal, onDetach, onHeld);
  },
  read(signal, onDetach) {
    this.generation += 1;
    changed(this);
    return attach(this, this.generation, signal, onDetach);
  },
  hold() {
    if (this.ended || this.held) return;
    this.held = true;
    changed(this);
  },
  get length() {
    return this.base + this.backlog.length;
  },
  get retained() {
    return this.base + this.backlog.length - this.delivered;
  },
  get subscribed() {
    return this.active > 0;
  },
};

function changed<T>(stream: Stream<T>): void {
  // Most pushes find the subscriber busy writing: nothing to wake, nothing to allocate.
  const waiters = stream.waiters;
  if (waiters === undefined || waiters.length === 0) return;
  // Each waiter removes itself (the last, from the end) and only schedules its continuation.
  for (let i = waiters.length - 1; i >= 0; i--) wake(waiters[i] as Reader<T>);
}

/** The oldest undelivered message was written, and is never sent again: let it go. */
function markDelivered<T>(stream: Stream<T>): void {
  stream.backlog[stream.delivered - stream.base] = undefined;
  stream.delivered += 1;
  const done = stream.delivered - stream.base;
  if (done >= 256 && done * 2 >= stream.backlog.length) {
    stream.backlog = stream.backlog.slice(done);
    stream.base = stream.delivered;
  }
}

/** A reader for subscription `mine` (the generation it took over as). */
function attach<T>(
  stream: Stream<T>,
  mine: number,
  signal: AbortSignal | undefined,
  onDetach: (() => void) | undefined,
): OutboundReader<T> {
  stream.active += 1;
  const record: Reader<T> = {
    done: false,
    error: undefined,
    held: false,
    stream,
    mine,
    signal,
    onDetach,
    onAbort: signal === undefined ? undefined : () => wake(record),
    handedOut: false,
    heartbeatDue: false,
    closed: false,
    resume: null,
    waiting: false,
    timer: undefined,
  };
  const reader = withMethods(record, readerMethods);
  if (record.onAbort !== undefined) {
    signal?.addEventListener("abort", record.onAbort, { once: true });
  }
  // The shared methods are typed for `unknown` messages: `T` is erased there.
  return reader as OutboundReader<T>;
}

/**
 * Whether `next` has something for the reader now (or its reading is over). The message it was
 * handed last is being written: not something more to read.
 */
function isReadable<T>(reader: Reader<T>): boolean {
  const stream = reader.stream;
  return (
    reader.closed ||
    reader.mine !== stream.generation ||
    reader.signal?.aborted === true ||
    stream.ended ||
    stream.held ||
    stream.delivered + (reader.handedOut ? 1 : 0) < stream.base + stream.backlog.length
  );
}

/** Registers the reader's pending wait (its `resume`) to be woken by a push or a heartbeat due. */
function awaitPush<T>(reader: Reader<T>): void {
  const stream = reader.stream;
  stream.waiters ??= [];
  stream.waiters.push(reader);
  reader.waiting = true;
  reader.timer = setTimeout(heartbeatDue, stream.options.heartbeatMs, reader);
}

/** `waitForMore` in the check phase: resumes the reader if it can read, else waits as `wait`. */
function waitAfterCheck<T>(reader: Reader<T>): void {
  // Already woken (a `close`, which wakes whatever waits).
  if (reader.resume === null) return;
  if (isReadable(reader)) wake(reader);
  else awaitPush(reader);
}

/** Wakes the reader's pending `wait`, if any. */
function wake<T>(reader: Reader<T>): void {
  const resolve = reader.resume;
  if (resolve === null) return;
  reader.resume = null;
  if (reader.waiting) {
    reader.waiting = false;
    clearTimeout(reader.timer);
    const waiters = reader.stream.waiters as Reader<T>[];
    const at = waiters.indexOf(reader);
    const last = waiters.pop() as Reader<T>;
    if (at < waiters.length) waiters[at] = last;
  }
  resolve();
}

function heartbeatDue<T>(reader: Reader<T>): void {
  reader.heartbeatDue = true;
  wake(reader);
}

/** The public members of a reader, shared by every reader (`this` is the reader's record). */
const readerMethods: Omit<OutboundReader<unknown>, "done" | "error" | "held"> &
  ThisType<Reader<unknown>> = {
  next() {
    if (this.done) return undefined;
    const stream = this.stream;
    if (this.closed || this.mine !== stream.generation) {
      // Taken over: the message being written goes to the new subscriber.
      this.done = true;
      return undefined;
    }
    if (this.handedOut) {
      markDelivered(stream);
      this.handedOut = false;
    }
    if (this.signal?.aborted) {
      this.done = true;
      return undefined;
    }
    if (stream.held) {
      this.done = true;
      this.held = true;
      return undefined;
    }
    const delivered = stream.delivered;
    if (delivered < stream.base + stream.backlog.length) {
      this.handedOut = true;
      if (stream.handed <= delivered) stream.handed = delivered + 1;
      return stream.backlog[delivered - stream.base];
    }
    if (this.heartbeatDue) {
      this.heartbeatDue = false;
      return stream.options.heartbeat();
    }
    if (stream.ended) {
      this.done = true;
      this.error = stream.endError;
    }
    return undefined;
  },
  wait() {
    if (isReadable(this)) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.resume = resolve;
      awaitPush(this);
    });
  },
  waitForMore() {
    return new Promise<void>((resolve) => {
      this.resume = resolve;
      setImmediate(waitAfterCheck, this);
    });
  },
  close() {
    if (this.closed) return;
    this.closed = true;
    this.done = true;
    wake(this);
    if (this.onAbort !== undefined) this.signal?.removeEventListener("abort", this.onAbort);
    this.stream.active -= 1;
    this.onDetach?.();
  },
};

/** `subscribe`'s generator: a loop over a reader, attached when it is first pulled. */
async function* run<T>(
  stream: Stream<T>,
  mine: number,
  signal?: AbortSignal,
  onDetach?: () => void,
  onHeld?: () => Promise<void>,
): AsyncGenerator<T, void, undefined> {
  const reader = attach(stream, mine, signal, onDetach);
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
