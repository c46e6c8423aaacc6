/**
 * The `LLMStream` of one model call over a source of pi-ai events.
 *
 * Guarantees (docs/design.md §4.1, types.ts): it never throws or rejects; every event is a snapshot
 * (snapshot.ts); exactly one terminal event (`done` or `error`) ends it, and nothing follows it;
 * a source that ends without a terminal event, or fails while iterating, ends the stream with a
 * synthetic `error`. The source is read eagerly into an unbounded queue, so snapshots are taken
 * as close as possible to when the provider produced the events.
 *
 * A relay stream (`createRelayStream`) has the same queue and members, fed by its owner with
 * events that are snapshots already (another stream's, gated-llm.ts): no second copy of each,
 * and no chain of async iterators between the two streams.
 *
 * A provider's stream (pi-ai's `AssistantMessageEventStream`, `ProviderEvents`) is read as the
 * provider pushes each event (`readPushed`), not through its async iterator.
 */
import type { AssistantMessage, AssistantMessageEvent } from "@earendil-works/pi-ai";
import { errorMessage } from "../errors/error-message.ts";
import { createSnapshotter, type Snapshotter } from "./snapshot.ts";
import type { LLMStream, RequestAttempt, ResponseEvent, SentRequest } from "./types.ts";
import { withMethods } from "./with-methods.ts";

/**
 * pi-ai's event stream of one call (`AssistantMessageEventStream`): the provider calls `push`
 * for each event and `end` once it is done; what was pushed before anyone reads waits in the
 * stream's own queue, which its async iterator hands out.
 */
export interface ProviderEvents extends AsyncIterable<AssistantMessageEvent> {
  push(event: AssistantMessageEvent): void;
}

/** The stream's source (data), and its hooks. */
export interface ResponseStreamOptions {
  readonly callID: string;
  readonly controller: AbortController;
  /**
   * The events, or a function that starts the provider's stream (called once the gate opens; a
   * synchronous throw becomes the stream's error), read push-style (`readPushed`).
   */
  readonly events: AsyncIterable<AssistantMessageEvent> | (() => ProviderEvents);
  /**
   * Kept apart from the data, so a copy of these options (`{ ...options, callID }`) keeps every
   * hook even when they live on a record's prototype (llm.ts).
   */
  readonly hooks: ResponseStreamHooks;
}

/**
 * What the stream asks its caller. Always called as methods of this object (`this` is `hooks`),
 * so a caller may pass a record whose functions are shared by every call (llm.ts, issue #19).
 * Its members are methods shared by every instance: call them on the object, never pass them on
 * (bind or wrap in an arrow).
 */
export interface ResponseStreamHooks {
  /** The error message of a failure the source did not report itself. */
  toFailure(reason: "error" | "aborted", errorMessage: string): AssistantMessage;
  /** Last say on the terminal error message (e.g. a clearer cause, redaction). */
  finishError?(error: AssistantMessage): AssistantMessage;
  exactRequest?(): SentRequest | undefined;
  attempts?(): readonly RequestAttempt[];
  /** Called once, after the terminal event was queued (e.g. to drop listeners). */
  onEnd?(): void;
  /**
   * Awaited before the source is read (e.g. a free call slot, model-health.ts); the function it
   * resolves with is called once the stream has ended. An abort while waiting ends the stream
   * with `error(aborted)`.
   */
  gate?(): Promise<() => void>;
  /** Sees every event as it is handed out (terminal errors after `finishError`). */
  observe?(event: ResponseEvent): void;
  /**
   * `toolCallArgumentsText` asked here first (a stream over another call's events, whose raw
   * argument text only that call has); the stream's own snapshots answer when it has none.
   */
  argumentsText?(contentIndex: number): string | undefined;
}

/**
 * One call's stream: a plain record of its state, whose prototype is `streamMethods`, shared by
 * every stream (issue #19: a factory of closures made ≈ 12 closures and their context per call
 * in flight). `callID` and `signal` are its own data members; the rest of `LLMStream` is on the
 * prototype (`exactRequest` and `attempts` as accessors that read the call's state when asked).
 */
interface Stream {
  readonly callID: string;
  readonly signal: AbortSignal;
  readonly controller: AbortController;
  readonly hooks: ResponseStreamHooks;
  /** Undefined for a relay stream, whose events are another stream's snapshots. */
  readonly snapshotter: Snapshotter | undefined;
  /** Events not handed out yet, from `head` on (slots before it are emptied). */
  queue: ResponseEvent[];
  head: number;
  /**
   * The oldest `recv` waiting for an event, then any others, oldest first (made when a second
   * waits: an array grown by `push` reserves room for 17, kept for the call's life; issue #19).
   */
  waiter: Waiter | undefined;
  moreWaiters: Waiter[] | undefined;
  /** The terminal event was queued (or handed to a waiter). */
  terminated: boolean;
  ended: boolean;
}

type Waiter = (event: ResponseEvent | undefined) => void;

export function createResponseStream(options: ResponseStreamOptions): LLMStream {
  const record = createRecord(options, createSnapshotter());
  void pump(record, options.events);
  return record;
}

/**
 * A stream its owner feeds: `relayEvent` hands in each event (a snapshot already, handed out as
 * it is; `finishError` and `observe` apply as for any stream), `endRelay` ends it after the
 * terminal event (or after a failure through `toFailure`, if the owner has none).
 */
export function createRelayStream(options: Omit<ResponseStreamOptions, "events">): LLMStream {
  return createRecord(options, undefined);
}

/** Hands `event` to a relay stream's reader (`createRelayStream`). */
export function relayEvent(relay: LLMStream, event: ResponseEvent): void {
  const stream = relay as unknown as Stream;
  const handed = finish(stream, event);
  stream.hooks.observe?.(handed);
  deliver(stream, handed);
}

/**
 * Ends a relay stream: after its terminal event, or with a synthetic `error` (`message`) when
 * it had none.
 */
export function endRelay(relay: LLMStream, message: string): void {
  const stream = relay as unknown as Stream;
  if (stream.ended) return;
  if (!stream.terminated) deliverFailure(stream, message);
  end(stream);
}

function createRecord(
  options: Omit<ResponseStreamOptions, "events">,
  snapshotter: Snapshotter | undefined,
): Stream & LLMStream {
  const hooks = options.hooks;
  // Fails where the stream is made, not at the first provider failure (which must end it with
  // one terminal event, its message redacted by `finishError`).
  if (typeof hooks?.toFailure !== "function") {
    throw new TypeError("createResponseStream: options.hooks.toFailure must be a function");
  }
  const stream: Stream = {
    callID: options.callID,
    signal: options.controller.signal,
    controller: options.controller,
    hooks,
    snapshotter,
    queue: [],
    head: 0,
    waiter: undefined,
    moreWaiters: undefined,
    terminated: false,
    ended: false,
  };
  return withMethods(stream, streamMethods);
}

/** The members of `LLMStream`, shared by every stream (`this` is the stream's record). */
const streamMethods: Omit<LLMStream, "callID" | "signal"> & ThisType<Stream & LLMStream> = {
  recv() {
    if (this.head < this.queue.length) return Promise.resolve(poll(this));
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      if (this.waiter === undefined) this.waiter = resolve;
      else {
        this.moreWaiters ??= [];
        this.moreWaiters.push(resolve);
      }
    });
  },
  poll() {
    return poll(this);
  },
  abort(this: Stream & LLMStream, reason?: string) {
    this.controller.abort(reason ?? "aborted by the caller");
  },
  toolCallArgumentsText(contentIndex) {
    return (
      this.hooks.argumentsText?.(contentIndex) ??
      this.snapshotter?.toolCallArgumentsText(contentIndex)
    );
  },
  async *[Symbol.asyncIterator]() {
    for (;;) {
      const event = await this.recv();
      if (event === undefined) return;
      yield event;
    }
  },
  get exactRequest() {
    return this.hooks.exactRequest?.();
  },
  get attempts(): readonly RequestAttempt[] {
    return Object.freeze([...(this.hooks.attempts?.() ?? [])]);
  },
};

function deliver(stream: Stream, event: ResponseEvent): void {
  if (event.type === "done" || event.type === "error") stream.terminated = true;
  const waiter = stream.waiter;
  if (waiter === undefined) {
    stream.queue.push(event);
    return;
  }
  stream.waiter = stream.moreWaiters?.shift();
  waiter(event);
}

function failure(stream: Stream, message: string): ResponseEvent {
  const reason = stream.signal.aborted ? "aborted" : "error";
  return finish(stream, {
    type: "error",
    reason,
    error: stream.hooks.toFailure(reason, message),
  });
}

function finish(stream: Stream, event: ResponseEvent): ResponseEvent {
  const hooks = stream.hooks;
  if (event.type !== "error" || hooks.finishError === undefined) return event;
  return { ...event, error: hooks.finishError(event.error) };
}

function deliverFailure(stream: Stream, message: string): void {
  const event = failure(stream, message);
  stream.hooks.observe?.(event);
  deliver(stream, event);
}

/** Reads the source into the queue, from when the gate opens to the terminal event. */
async function pump(stream: Stream, events: ResponseStreamOptions["events"]): Promise<void> {
  const { hooks } = stream;
  const snapshotter = stream.snapshotter as Snapshotter;
  let release: (() => void) | undefined;
  try {
    release = await hooks.gate?.();
    if (typeof events === "function") {
      await readPushed(stream, events());
    } else {
      for await (const event of events) {
        take(stream, snapshotter, event);
        if (stream.terminated) break;
      }
    }
    if (!stream.terminated) {
      deliverFailure(stream, "the provider stream ended without a terminal event");
    }
  } catch (error) {
    if (!stream.terminated) deliverFailure(stream, errorMessage(error));
  } finally {
    release?.();
    end(stream);
  }
}

/** Hands out `event` as a snapshot (observed, terminal errors through `finishError`). */
function take(stream: Stream, snapshotter: Snapshotter, event: AssistantMessageEvent): void {
  const snapshot = finish(stream, snapshotter.toSnapshot(event));
  stream.hooks.observe?.(snapshot);
  deliver(stream, snapshot);
}

/**
 * Reads a provider's stream by taking its `push` over: each event is snapshot and handed out
 * while the provider pushes it. Read through the stream's async iterator instead, each event
 * cost a promise, a generator step and a `for await` step that lived until the next event: at
 * 2,000 paced streams, ≈ 20 % more time in young-generation collections and longer pauses
 * (issue #19, docs/architecture.md). Resolves at the terminal event or at the stream's end.
 *
 * What pi-ai does itself is kept: the terminal event goes through the stream's own `push` (which
 * sets the final message's `durationMs`), and `end` is the stream's own. Both reach this reader
 * through the stream's iterator, read from the start: it hands out the terminal event, whatever
 * was pushed before the take-over (pi-ai pushes synchronously only a failure, then ends the
 * stream), and it ends at `end` (a stream ended without a terminal event ends with an error, as
 * any source). A throw while an event is handled ends the stream with an error instead of
 * reaching the provider.
 */
function readPushed(stream: Stream, source: ProviderEvents): Promise<void> {
  const snapshotter = stream.snapshotter as Snapshotter;
  return new Promise<void>((resolve) => {
    let open = true;
    const handle = (event: AssistantMessageEvent): void => {
      if (!open) return;
      try {
        take(stream, snapshotter, event);
      } catch (error) {
        if (!stream.terminated) deliverFailure(stream, errorMessage(error));
      }
      if (stream.terminated) close();
    };
    const close = (): void => {
      open = false;
      resolve();
    };
    const queued = source[Symbol.asyncIterator]();
    const push = source.push;
    source.push = (event) => {
      if (event.type === "done" || event.type === "error") push.call(source, event);
      else handle(event);
    };
    drain(queued, handle).then(close, close);
  });
}

/** Hands `queued`'s events to `handle` until it ends. */
async function drain(
  queued: AsyncIterator<AssistantMessageEvent>,
  handle: (event: AssistantMessageEvent) => void,
): Promise<void> {
  for (;;) {
    const next = await queued.next();
    if (next.done === true) return;
    handle(next.value);
  }
}

/** After the terminal event: wakes every reader still waiting (with `undefined`). */
function end(stream: Stream): void {
  stream.ended = true;
  const waiters = [stream.waiter, ...(stream.moreWaiters ?? [])];
  stream.waiter = undefined;
  stream.moreWaiters = undefined;
  for (const waiter of waiters) waiter?.(undefined);
  stream.hooks.onEnd?.();
}

function poll(stream: Stream): ResponseEvent | undefined {
  const queue = stream.queue;
  const head = stream.head;
  if (head >= queue.length) return undefined;
  const event = queue[head] as ResponseEvent;
  queue[head] = undefined as unknown as ResponseEvent;
  stream.head = head + 1;
  if (stream.head > 1024 && stream.head * 2 > queue.length) {
    queue.splice(0, stream.head);
    stream.head = 0;
  }
  return event;
}
