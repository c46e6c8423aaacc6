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
 * The direct RunSSE responder gets its response's hook from `track`; handlers behind Connect
 * get it as a context value (`kHoldResponse`, put there by `contextValues`).
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
  /** Tracks `response` until it closes; returns its held hook. */
  track(request: Request, response: Response): HoldResponse;
  /** Connect's `contextValues`: the held hook of `request`'s response, if it is tracked. */
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
  /** The hooks by request, for `contextValues` (Connect gives it the request only). */
  const hooks = new WeakMap<Request, HoldResponse>();
  const waiting = new Set<Response>();
  let onSettled: (() => void) | null = null;

  const release = (response: Response): void => {
    if (!waiting.delete(response)) return;
    if (waiting.size === 0) onSettled?.();
  };

  return {
    track(request, response) {
      if (!isClosed(response)) waiting.add(response);
      let closed: Promise<void> | undefined;
      const gone = (): Promise<void> => {
        closed ??= new Promise<void>((resolve) => {
          if (isClosed(response)) resolve();
          else response.once("close", () => resolve());
        });
        return closed;
      };
      response.once("close", () => release(response));
      const hold: HoldResponse = () => {
        release(response);
        return gone();
      };
      hooks.set(request, hold);
      return hold;
    },
    contextValues(request) {
      const values = createContextValues();
      const hold = hooks.get(request);
      return hold === undefined ? values : values.set(kHoldResponse, hold);
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
