/**
 * The `LLMStream` of one model call over a source of pi-ai events.
 *
 * Guarantees (docs/design.md §4.1, types.ts): it never throws or rejects; every event is a snapshot
 * (snapshot.ts); exactly one terminal event (`done` or `error`) ends it, and nothing follows it;
 * a source that ends without a terminal event, or fails while iterating, ends the stream with a
 * synthetic `error`. The source is read eagerly into an unbounded queue, so snapshots are taken
 * as close as possible to when the provider produced the events.
 */
import type { AssistantMessage, AssistantMessageEvent } from "@earendil-works/pi-ai";
import { errorMessage } from "../errors/error-message.ts";
import { createSnapshotter } from "./snapshot.ts";
import type { LLMStream, RequestAttempt, ResponseEvent, SentRequest } from "./types.ts";
import { withGetters } from "./with-getters.ts";

export interface ResponseStreamOptions {
  readonly callID: string;
  readonly controller: AbortController;
  readonly events: AsyncIterable<AssistantMessageEvent>;
  /** The error message of a failure the source did not report itself. */
  readonly toFailure: (reason: "error" | "aborted", errorMessage: string) => AssistantMessage;
  /** Last say on the terminal error message (e.g. a clearer cause, redaction). */
  readonly finishError?: (error: AssistantMessage) => AssistantMessage;
  readonly exactRequest?: () => SentRequest | undefined;
  readonly attempts?: () => readonly RequestAttempt[];
  /** Called once, after the terminal event was queued (e.g. to drop listeners). */
  readonly onEnd?: () => void;
  /**
   * Awaited before the source is read (e.g. a free call slot, model-health.ts); the function it
   * resolves with is called once the stream has ended. An abort while waiting ends the stream
   * with `error(aborted)`.
   */
  readonly gate?: () => Promise<() => void>;
  /** Sees every event as it is handed out (terminal errors after `finishError`). */
  readonly observe?: (event: ResponseEvent) => void;
}

export function createResponseStream(options: ResponseStreamOptions): LLMStream {
  const { controller } = options;
  const snapshotter = createSnapshotter();
  const queue: ResponseEvent[] = [];
  let head = 0;
  const waiters: ((event: ResponseEvent | undefined) => void)[] = [];
  let ended = false;

  const deliver = (event: ResponseEvent) => {
    const waiter = waiters.shift();
    if (waiter === undefined) queue.push(event);
    else waiter(event);
  };

  const failure = (message: string): ResponseEvent => {
    const reason = controller.signal.aborted ? "aborted" : "error";
    return finish({ type: "error", reason, error: options.toFailure(reason, message) });
  };

  const finish = (event: ResponseEvent): ResponseEvent => {
    if (event.type !== "error" || options.finishError === undefined) return event;
    return { ...event, error: options.finishError(event.error) };
  };

  const deliverFailure = (message: string): void => {
    const event = failure(message);
    options.observe?.(event);
    deliver(event);
  };

  const pump = async () => {
    let terminated = false;
    let release: (() => void) | undefined;
    try {
      release = await options.gate?.();
      for await (const event of options.events) {
        const snapshot = finish(snapshotter.toSnapshot(event));
        options.observe?.(snapshot);
        deliver(snapshot);
        if (snapshot.type === "done" || snapshot.type === "error") {
          terminated = true;
          break;
        }
      }
      if (!terminated) deliverFailure("the provider stream ended without a terminal event");
    } catch (error) {
      if (!terminated) deliverFailure(errorMessage(error));
    } finally {
      release?.();
      ended = true;
      for (const waiter of waiters.splice(0)) waiter(undefined);
      options.onEnd?.();
    }
  };
  void pump();

  const poll = (): ResponseEvent | undefined => {
    if (head >= queue.length) return undefined;
    const event = queue[head] as ResponseEvent;
    queue[head] = undefined as unknown as ResponseEvent;
    head++;
    if (head > 1024 && head * 2 > queue.length) {
      queue.splice(0, head);
      head = 0;
    }
    return event;
  };

  const recv = (): Promise<ResponseEvent | undefined> => {
    if (head < queue.length) return Promise.resolve(poll());
    if (ended) return Promise.resolve(undefined);
    return new Promise((resolve) => waiters.push(resolve));
  };

  const stream: Omit<LLMStream, "exactRequest" | "attempts"> = {
    callID: options.callID,
    signal: controller.signal,
    recv,
    poll,
    abort: (reason?: string) => controller.abort(reason ?? "aborted by the caller"),
    toolCallArgumentsText: (contentIndex) => snapshotter.toolCallArgumentsText(contentIndex),
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const event = await recv();
        if (event === undefined) return;
        yield event;
      }
    },
  };
  return withGetters(stream, {
    exactRequest: () => options.exactRequest?.(),
    attempts: (): readonly RequestAttempt[] => Object.freeze([...(options.attempts?.() ?? [])]),
  });
}
