/**
 * The responses that carry agent streams (RunSSE with either responder, over HTTP/1.1 or
 * HTTP/2, and the HTTP/2 `Run`), as a graceful shutdown needs them (server.ts `close`,
 * docs/architecture.md "Shutdown"):
 *
 * - a response whose stream is held (its turn goes on after the restart, or on another instance)
 *   is marked by its writer through `HoldResponse` and is not waited for: it writes nothing more
 *   and its connection is dropped with every other one, so the client reconnects;
 * - every other response is waited for until it has closed (`settled`): the stream ended before
 *   the shutdown (its turn is over), so its end reaches the client.
 *
 * The direct RunSSE responder calls `hold` itself; handlers behind Connect get a hook as a
 * context value (`kHoldResponse`, put there by `contextValues` for a response `viaConnect`
 * linked to its request). Tracking costs an open stream one set entry and a shared listener
 * (every open stream's heap counts, issue #19): closures and promises are made at shutdown only.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { type ContextValues, createContextKey, createContextValues } from "@connectrpc/connect";

/**
 * Marks the response held (the shutdown does not wait for it) and resolves once its connection
 * has closed: from then on nothing can be written to it.
 */
export type HoldResponse = () => Promise<void>;

/** The held hook of a Connect-served stream's response (none for other requests). */
export const kHoldResponse = createContextKey<HoldResponse | undefined>(undefined, {
  description: "marks the agent stream's response held (shutdown)",
});

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

export interface StreamResponses {
  /** Tracks `response` until it closes. */
  track(response: Response): void;
  /** A tracked response that Connect's handler writes for `request`: its hook is a context value. */
  viaConnect(request: Request, response: Response): void;
  /**
   * Marks `response` held (not waited for) and resolves once its connection has closed: from
   * then on nothing can be written to it.
   */
  hold(response: Response): Promise<void>;
  /** Connect's `contextValues`: the held hook of `request`'s response, if it is linked. */
  contextValues(request: Request): ContextValues;
  /**
   * Resolves once every tracked response has closed or is held, or after `limitMs` (a client
   * that does not read its end must not hold the shutdown).
   */
  settled(limitMs: number): Promise<void>;
  /** Responses waited for now (neither closed nor held). */
  readonly size: number;
}

export function createStreamResponses(): StreamResponses {
  const waiting = new Set<Response>();
  /** Connect-served responses by request (Connect gives `contextValues` the request only). */
  const linked = new WeakMap<Request, Response>();
  let onSettled: (() => void) | null = null;

  const release = (response: Response): void => {
    if (!waiting.delete(response)) return;
    if (waiting.size === 0) onSettled?.();
  };
  /** One listener for every response: no closure per stream. */
  function released(this: Response): void {
    release(this);
  }
  const hold = (response: Response): Promise<void> => {
    release(response);
    return new Promise<void>((resolve) => {
      if (isClosed(response)) resolve();
      else response.once("close", () => resolve());
    });
  };

  return {
    track(response) {
      if (isClosed(response)) return;
      waiting.add(response);
      response.on("close", released);
    },
    viaConnect(request, response) {
      linked.set(request, response);
    },
    hold,
    contextValues(request) {
      const values = createContextValues();
      const response = linked.get(request);
      return response === undefined ? values : values.set(kHoldResponse, () => hold(response));
    },
    settled(limitMs) {
      if (waiting.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, limitMs);
        function done(): void {
          clearTimeout(timer);
          onSettled = null;
          resolve();
        }
        onSettled = done;
      });
    },
    get size() {
      return waiting.size;
    },
  };
}

function isClosed(response: Response): boolean {
  return "stream" in response
    ? response.stream.closed || response.stream.destroyed
    : response.destroyed || response.closed;
}
