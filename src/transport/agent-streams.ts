/**
 * The agent streams of this process, by request id. A stream is created by whichever arrives
 * first, its RunSSE or its first BidiAppend (either order happens, cursor-protocol.md §1.4). A
 * request id this process has not seen may belong to a stream opened before a restart: the
 * runner's binding finds its conversation and turn, and the stream is restored (or, if its turn
 * is over, ended) before any append is applied.
 *
 * Streams are dropped when they have ended and no subscriber is attached, after
 * `retentionMs` (so a late reconnect still finds the end of the backlog), and streams that never
 * got a run request are dropped after `idleMs`.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { type AgentStream, type AgentStreamDeps, createAgentStream } from "./agent-stream.ts";

export interface AgentStreamsOptions {
  /** How long an ended stream is kept for a late or reconnecting RunSSE. */
  readonly retentionMs: number;
  /** How long a stream without a turn is kept. */
  readonly idleMs: number;
}

export interface AgentStreams {
  /** The stream of `requestID`, created (and restored, if it predates a restart) if needed. */
  open(requestID: string): Promise<AgentStream>;
  readonly size: number;
  /** Ends every stream (server shutdown). */
  closeAll(reason: string): void;
}

export function createAgentStreams(
  deps: Omit<AgentStreamDeps, "onSettled">,
  options: AgentStreamsOptions,
): AgentStreams {
  const streams = new Map<string, Promise<AgentStream>>();
  const timers = new Map<string, NodeJS.Timeout>();

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
        streams.delete(requestID);
      });
    }, afterMs);
    timer.unref?.();
    timers.set(requestID, timer);
  };

  const create = async (requestID: string): Promise<AgentStream> => {
    const stream = createAgentStream(requestID, {
      ...deps,
      onSettled: () => schedule(requestID, options.retentionMs),
    });
    schedule(requestID, options.idleMs);
    const bound = await deps.runner.findStream(requestID);
    if (bound?.clientState != null) {
      deps.log.info(
        { request: requestID, conversation: bound.conversationID, turn: bound.turnID },
        "picking up a stream opened before a restart",
      );
      await stream.restore(
        bound.conversationID,
        bound.turnID,
        Buffer.from(bound.clientState, "base64"),
      );
    }
    return stream;
  };

  return {
    open(requestID) {
      if (requestID === "") {
        return Promise.reject(new ConnectError("the request id is empty", Code.InvalidArgument));
      }
      let stream = streams.get(requestID);
      if (stream === undefined) {
        stream = create(requestID);
        streams.set(requestID, stream);
        stream.catch(() => streams.delete(requestID));
      }
      return stream;
    },
    get size() {
      return streams.size;
    },
    closeAll(reason) {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      for (const stream of streams.values())
        void stream.then(
          (s) => s.close(reason),
          () => {},
        );
      streams.clear();
    },
  };
}
