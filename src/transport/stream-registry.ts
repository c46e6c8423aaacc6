/**
 * The stream registry: the agent streams of this process, by request id. A stream is created by
 * whichever arrives first, its RunSSE or its first BidiAppend (either order happens,
 * docs/protocol.md §1.4). A request id this process has not seen may belong to a stream opened
 * before a restart: the runner's binding finds its conversation and turn, and the stream is
 * restored (or, if its turn is over, ended) before any append is applied. Only the newest stream
 * of a conversation keeps what it needs for that; an older one is refused (`stream_released`).
 *
 * Streams are dropped when they have ended and no subscriber is attached, after
 * `retentionMs` (so a late reconnect still finds the end of the backlog), and streams that never
 * got a run request are dropped after `idleMs`.
 */
import { type AgentStream, type AgentStreamDeps, createAgentStream } from "./agent-stream.ts";
import { toProtocolError } from "./cursor/index.ts";

export interface StreamRegistryOptions {
  /** How long an ended stream is kept for a late or reconnecting RunSSE. */
  readonly retentionMs: number;
  /** How long a stream without a turn is kept. */
  readonly idleMs: number;
  /**
   * The most streams kept at once. At the cap, the oldest ended stream nobody reads is dropped
   * to make room; when every stream is live, a new one is refused with `resource_exhausted`.
   */
  readonly maxStreams: number;
}

/** The longest request id accepted (clients use UUIDs, 36 characters). */
export const MAX_REQUEST_ID_LENGTH = 128;

export interface StreamRegistry {
  /**
   * The stream of `requestID`, created (and restored, if it predates a restart) if needed. With
   * `create: false` (an append that carries no run request), a request id that is neither live
   * here nor bound in the store is refused with `not_found`, and nothing is kept for it.
   */
  open(requestID: string, options?: { readonly create: boolean }): Promise<AgentStream>;
  readonly size: number;
  /**
   * Shutdown (server.ts `close`): holds every stream whose turn is not over, and every stream
   * opened from now on (outbound-stream.ts `hold`): its turn goes on after the restart or on
   * another instance, so nothing more of it reaches a client from this process, not even an
   * end. A stream that has ended keeps its end for its reader.
   */
  hold(): void;
  /** Ends every stream (server shutdown, after `hold`). */
  closeAll(reason: string): void;
}

export function createStreamRegistry(
  deps: Omit<AgentStreamDeps, "onSettled">,
  options: StreamRegistryOptions,
): StreamRegistry {
  const streams = new Map<string, Promise<AgentStream>>();
  /** The streams created so far, oldest first (for making room under `maxStreams`). */
  const created = new Map<string, AgentStream>();
  const timers = new Map<string, NodeJS.Timeout>();
  let holding = false;

  const drop = (requestID: string): void => {
    clearTimeout(timers.get(requestID));
    timers.delete(requestID);
    streams.delete(requestID);
    created.delete(requestID);
  };

  /**
   * Makes room for one more stream by dropping the oldest one that has ended and that nobody
   * reads (it is only kept for a late reconnect); false when every stream is still live.
   */
  const makeRoom = (): boolean => {
    for (const [requestID, stream] of created) {
      if (stream.outbound.ended && !stream.outbound.subscribed) {
        drop(requestID);
        return true;
      }
    }
    return false;
  };

  /**
   * Checks the stream after `afterMs`: an ended stream nobody reads is dropped; one that never got
   * a turn is ended and dropped; anything else is checked again later.
   */
  const schedule = (requestID: string, afterMs: number): void => {
    clearTimeout(timers.get(requestID));
    const timer = setTimeout(() => {
      timers.delete(requestID);
      void streams.get(requestID)?.then((stream) => {
        if (stream.outbound.subscribed) return schedule(requestID, options.idleMs);
        if (!stream.outbound.ended && stream.conversationID !== null) {
          return schedule(requestID, options.idleMs);
        }
        if (!stream.outbound.ended) stream.close("no run request arrived for this stream");
        drop(requestID);
      });
    }, afterMs);
    timer.unref?.();
    timers.set(requestID, timer);
  };

  const create = async (requestID: string, mayCreate: boolean): Promise<AgentStream> => {
    const bound = await deps.runner.findStream(requestID);
    if (bound === null && !mayCreate) {
      throw toProtocolError({ type: "unknown_request_id", requestID });
    }
    // Bound, but nothing saved to pick it up: a newer stream of its conversation released it
    // (store/request-streams.ts, docs/architecture.md "The Cursor transport"). Its turn is over:
    // refused at once, not left waiting for a run request that cannot come.
    if (bound !== null && bound.clientState === null) {
      throw toProtocolError({ type: "stream_released", requestID });
    }
    const stream = createAgentStream(requestID, {
      ...deps,
      onSettled: () => schedule(requestID, options.retentionMs),
    });
    schedule(requestID, options.idleMs);
    if (bound?.clientState != null) {
      deps.log.info(
        { request: requestID, conversation: bound.conversationID, turn: bound.turnID },
        "picking up a stream opened before a restart",
      );
      await stream.restore(bound.conversationID, bound.turnID, bound.clientState);
    }
    return stream;
  };

  return {
    open(requestID, openOptions = { create: true }) {
      if (requestID === "") {
        return Promise.reject(toProtocolError({ type: "empty_request_id" }));
      }
      if (requestID.length > MAX_REQUEST_ID_LENGTH) {
        return Promise.reject(
          toProtocolError({ type: "request_id_too_long", max: MAX_REQUEST_ID_LENGTH }),
        );
      }
      let stream = streams.get(requestID);
      if (stream === undefined) {
        if (streams.size >= options.maxStreams && !makeRoom()) {
          return Promise.reject(
            toProtocolError({ type: "too_many_streams", max: options.maxStreams }),
          );
        }
        const opening = create(requestID, openOptions.create);
        stream = opening;
        streams.set(requestID, opening);
        opening.then(
          (opened) => {
            if (holding) opened.hold();
            if (streams.get(requestID) === opening) created.set(requestID, opened);
          },
          () => {
            if (streams.get(requestID) === opening) drop(requestID);
          },
        );
      }
      return stream;
    },
    get size() {
      return streams.size;
    },
    hold() {
      holding = true;
      // At once for the streams open now; the ones still opening when they are.
      for (const stream of created.values()) stream.hold();
      for (const stream of streams.values()) {
        void stream.then(
          (s) => s.hold(),
          () => {},
        );
      }
    },
    closeAll(reason) {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      created.clear();
      for (const stream of streams.values())
        void stream.then(
          (s) => s.close(reason),
          () => {},
        );
      streams.clear();
    },
  };
}
