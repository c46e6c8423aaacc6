/**
 * The end of an HTTP/2 bidi `Run` must reach a client that has not read it yet.
 *
 * Connect's Node handler (`universalResponseToNodeResponse` in @connectrpc/connect-node 2.x)
 * resets a stream with `RST_STREAM(NO_ERROR)` right after its trailers whenever the client has not
 * ended its request, so that a client still sending stops (RFC 9113 §8.1 allows it). A bidi `Run`
 * client keeps its request open for the whole turn and ends it only once it has read the
 * response's end. Node's http2 client, which the `cursor-agent` CLI and our test client use
 * through connect-es, handles that reset as an abort whenever part of the response is still in its
 * buffers: the stream's readable fails with `ERR_STREAM_PREMATURE_CLOSE` and everything unread
 * is dropped, in a turn with large checkpoints the last checkpoint and `turn_ended` (issue #19,
 * docs/protocol.md §1.3). So for the `Run` that reset is put off: the stream closes when the
 * client ends or resets its side (a Node client resets it with NO_ERROR once it has read the end),
 * and only a client that does neither within `graceMs` is reset then, as Connect would have.
 * Any other `close` (an error code, or before the response is complete) goes through at once.
 */
import { constants, type ServerHttp2Stream } from "node:http2";

/** How long a client that has the whole response may take to close its side of a `Run`. */
export const RUN_RESET_GRACE_MS = 10_000;

type Close = ServerHttp2Stream["close"];

/** The state a deferring stream carries: one timer, only once its response is complete. */
const kTimer = Symbol("deferred reset");
type Deferring = ServerHttp2Stream & { [kTimer]?: ReturnType<typeof setTimeout> };

/** Applies to `stream` (the `Run` response's stream, before Connect's handler gets it). */
export function deferEarlyReset(stream: ServerHttp2Stream, graceMs = RUN_RESET_GRACE_MS): void {
  graces.set(stream, graceMs);
  // One shared function, not a closure per stream (every open stream's heap counts, issue #19).
  stream.close = deferredClose;
}

const graces = new WeakMap<ServerHttp2Stream, number>();

function deferredClose(this: Deferring, code?: number, callback?: () => void): void {
  const close = (Object.getPrototypeOf(this) as { close: Close }).close;
  const early =
    (code ?? constants.NGHTTP2_NO_ERROR) === constants.NGHTTP2_NO_ERROR &&
    this.sentTrailers !== undefined &&
    this.state.remoteClose === 0 &&
    !this.closed;
  if (!early) {
    clearTimeout(this[kTimer]);
    close.call(this, code, callback);
    return;
  }
  if (this[kTimer] !== undefined) return;
  const timer = setTimeout(() => {
    if (!this.closed && !this.destroyed) close.call(this, constants.NGHTTP2_NO_ERROR, callback);
  }, graces.get(this) ?? RUN_RESET_GRACE_MS);
  timer.unref();
  this[kTimer] = timer;
  this.once("close", () => clearTimeout(timer));
}
