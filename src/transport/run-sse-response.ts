/**
 * The RunSSE response written directly (docs/protocol.md §1.3, docs/architecture.md "RunSSE"),
 * for the request every client sends: HTTP/1.1, `application/connect+proto`, one uncompressed
 * envelope holding a `BidiRequestId`, nothing after it. Anything else (JSON, a compressed
 * envelope, HTTP/2, a bad timeout header, a body that goes on) is left to Connect's handler.
 *
 * Why not Connect's handler for this one procedure: every turn's text goes through it, and its
 * server-streaming pipeline cost, measured (issue #19): ≈1.6 ms of a turn's time to first text
 * between our message and the socket write (≈6 async-generator layers and a promise per layer per
 * message, plus per-message serialize/envelope/compress steps), the response head held back
 * until the first message (`untilFirst`), and its generators and closures in every open stream's
 * heap. Here one loop pulls the agent stream's outbound reader (outbound-stream.ts `read`) and
 * writes each message as one envelope; a promise only when there is nothing to send or the
 * socket pushes back.
 *
 * The bytes are Connect's: the message is `toBinary` of the procedure's output (what Connect's
 * binary serialization does; `toServerMessageBytes` writes a delta's same bytes directly), framed
 * as `encodeEnvelope` frames it, compressed with the codec `compressionNegotiate` picks from the
 * same list and the same threshold the Connect adapter uses, and the stream ends with
 * `createEndStreamSerialization`'s end-of-stream message (`{}`, or the error's JSON with its
 * metadata). Headers: status 200 and Connect's content type (and
 * `connect-content-encoding` when compressing), sent as soon as the stream is open instead of
 * with the first message. run-sse-response.test.ts compares both ways byte for byte. Each
 * message's envelope goes to the connection as one HTTP/1.1 chunk made in one buffer
 * (`toFramedEnvelope`), the framing Node's `response.write` would add in four socket writes; the
 * head and the end go through the response.
 *
 * Behaviour kept from Connect's handler: the request body is read to its end before the stream is
 * opened; `connect-timeout-ms` ends the response after that long with the clean end-of-stream
 * `{}` (Connect aborts the handler's signal, our subscriber ends, and it writes `{}`); a client
 * that goes away ends the subscriber (reconnect grace, agent-stream.ts); a message counts as
 * delivered once written (the socket's `write` returned true, or 'drain' came), and the loop
 * waits for 'drain' rather than buffering; a stream held at shutdown gets no end of stream (both
 * ways: the route awaits the hook from `contextValues`), its connection is dropped
 * (stream-responses.ts).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Socket } from "node:net";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type Compression,
  compressedFlag,
  compressionNegotiate,
  encodeEnvelope,
} from "@connectrpc/connect/protocol";
import {
  createEndStreamSerialization,
  endStreamFlag,
  headerStreamAcceptEncoding,
  headerStreamEncoding,
  headerTimeout,
  parseContentType,
  parseTimeout,
} from "@connectrpc/connect/protocol-connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { checkFirstEnvelope, refuse } from "./client-faults.ts";
import {
  type AgentServerMessage,
  BidiRequestIdSchema,
  toServerMessageBytes,
} from "./cursor/index.ts";
import type { RequestHandler } from "./http/listen.ts";
import type { Log } from "./log.ts";
import type { OutboundReader } from "./outbound-stream.ts";
import type { OpenRunSse } from "./run-sse-open.ts";
import type { StreamResponses } from "./stream-responses.ts";

/** What the Connect adapter accepts and offers (its default, passed to it explicitly). */
export const CONNECT_COMPRESSION: readonly Compression[] = [compressionGzip, compressionBrotli];
/** Connect's default: smaller messages are never compressed. */
export const COMPRESS_MIN_BYTES = 1024;

const END_STREAM = createEndStreamSerialization(undefined);
/** Connect's streaming content type (rewritten for `contentType: "event-stream"`). */
const CONTENT_TYPE = "application/connect+proto";
const AGENT_RUN_SSE_PATH = "/agent.v1.AgentService/RunSSE";

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

export interface RunSseHandlerOptions {
  /** Opens the stream with the shared checks (run-sse-open.ts). */
  readonly open: OpenRunSse;
  /** Connect's adapter, whose RunSSE route serves what the direct responder leaves to it. */
  readonly connect: RequestHandler;
  /** `connect`: every RunSSE through Connect's handler (for comparing; server.ts option). */
  readonly responder: "direct" | "connect";
  /** `event-stream`: the response is typed `text/event-stream` (docs/protocol.md §1.3). */
  readonly contentType: "event-stream" | "connect";
  /** The largest request envelope; larger ones are refused as soon as their header arrives. */
  readonly maxEnvelopeBytes: number;
  /** How long the request envelope may take to arrive whole. */
  readonly envelopeTimeoutMs: number;
  /**
   * Tracks each response for a graceful shutdown (stream-responses.ts); Connect's handler gets
   * the hook through Connect's `contextValues`.
   */
  readonly responses: Pick<StreamResponses, "track" | "viaConnect" | "hold">;
  readonly log: Log;
}

/**
 * Serves a RunSSE request (after routing, host and token checks, server.ts): waits for its one
 * envelope (client-faults.ts `checkFirstEnvelope`), refuses a bad or oversized one, then answers
 * it directly or hands it to Connect.
 */
export function createRunSseHandler(options: RunSseHandlerOptions): RequestHandler {
  const { open, log, responses } = options;
  const path = AGENT_RUN_SSE_PATH;
  /** Connect's handler, which finds the response's held hook among its context values. */
  const connect: RequestHandler = (request, response) => {
    responses.viaConnect(request, response);
    options.connect(request, response);
  };
  return (request, response) => {
    responses.track(response);
    if (options.contentType === "event-stream") asEventStream(response);
    // An announced size over the limit is refused at once.
    void checkFirstEnvelope(request, options.maxEnvelopeBytes, options.envelopeTimeoutMs).then(
      (check) => {
        switch (check.type) {
          case "ok": {
            const requestID = toRunSseRequestID(request, check.flags, check.payload);
            if (requestID === null) {
              log.warn({ path }, "request refused: the body is not a valid message");
              refuse(
                request,
                response,
                400,
                "invalid_argument",
                "the request body is not a valid RunSSE request (a request id)",
              );
              return;
            }
            // A response without its connection yet (behind another on a pipelining one) is
            // left to Connect: the direct responder writes to the connection.
            const direct =
              requestID === undefined ||
              options.responder === "connect" ||
              !isHttp1(request) ||
              response.socket === null
                ? null
                : acceptsDirect(request, check.flags);
            if (requestID === undefined || direct === null) {
              connect(request, response);
              return;
            }
            serveRunSse(
              request as IncomingMessage,
              response as ServerResponse,
              direct,
              requestID,
              5 + check.payload.length,
              open,
              responses,
              () => connect(request, response),
            ).catch((error: unknown) => {
              // Not expected (every failure of the stream is its end-of-stream message): the
              // client sees the connection drop, as with a crash, and may reconnect.
              log.error(
                { path, error: error instanceof Error ? error.message : String(error) },
                "RunSSE response failed",
              );
              response.destroy();
            });
            return;
          }
          case "too_large":
            log.warn({ path, announced: check.announced }, "request refused: envelope too large");
            refuse(
              request,
              response,
              429,
              "resource_exhausted",
              `the request envelope announces ${check.announced} bytes; the most accepted is ${options.maxEnvelopeBytes}`,
            );
            return;
          case "truncated":
            log.warn({ path }, "request refused: truncated envelope");
            refuse(
              request,
              response,
              400,
              "invalid_argument",
              "the request envelope is truncated (it did not arrive whole)",
            );
            return;
          case "gone":
            return;
        }
      },
    );
  };
}

/** A RunSSE request the direct responder serves, as `acceptsDirect` found it. */
export interface DirectRunSse {
  /** The response compression the client asked for, if any we have. */
  readonly compression: Compression | null;
  /** `connect-timeout-ms`, if sent. */
  readonly timeoutMs: number | undefined;
}

/**
 * Whether the direct responder serves this request (its first envelope has `flags`); null: leave
 * it to Connect, which answers whatever else a request can be.
 */
function acceptsDirect(request: IncomingMessage, flags: number): DirectRunSse | null {
  if (request.method !== "POST" || flags !== 0) return null;
  const type = parseContentType(request.headers["content-type"] ?? null);
  if (type === undefined || !type.stream || !type.binary) return null;
  const compression = compressionNegotiate(
    CONNECT_COMPRESSION as Compression[],
    headerOf(request, headerStreamEncoding),
    headerOf(request, headerStreamAcceptEncoding),
    headerStreamAcceptEncoding,
  );
  if (compression.error !== undefined) return null;
  const timeout = parseTimeout(headerOf(request, headerTimeout), Number.MAX_SAFE_INTEGER);
  if (timeout.error !== undefined) return null;
  return { compression: compression.response, timeoutMs: timeout.timeoutMs };
}

/**
 * Serves a RunSSE whose first envelope (`envelopeBytes` long, already checked and put back by
 * client-faults.ts `checkFirstEnvelope`) holds `requestID`. Calls `fallback` instead when more
 * body follows that envelope (Connect answers that).
 */
async function serveRunSse(
  request: IncomingMessage,
  response: ServerResponse,
  direct: DirectRunSse,
  requestID: string,
  envelopeBytes: number,
  open: OpenRunSse,
  responses: Pick<StreamResponses, "hold">,
  fallback: () => void,
): Promise<void> {
  let gone = false;
  let held = false;
  let expired = false;
  let reader: OutboundReader<AgentServerMessage> | null = null;
  let deadline: ReturnType<typeof setTimeout> | undefined;
  /** Resolves a write that waits for 'drain' (true) or for the connection to go (false). */
  let drained: ((flowing: boolean) => void) | null = null;
  const onClose = (): void => {
    gone = true;
    clearTimeout(deadline);
    reader?.close();
    drained?.(false);
  };
  const onDrain = (): void => drained?.(true);
  if (direct.timeoutMs !== undefined) {
    // As Connect's deadline: the subscriber ends, and with it the stream, cleanly.
    deadline = setTimeout(() => {
      expired = true;
      reader?.close();
    }, direct.timeoutMs);
  }
  const body = await readToEnd(request, envelopeBytes);
  if (body === "more") {
    clearTimeout(deadline);
    fallback();
    return;
  }
  response.once("close", onClose);
  if (body === "gone" || response.destroyed) onClose();

  const { compression } = direct;
  const headers: Record<string, string> = { "content-type": CONTENT_TYPE };
  if (compression !== null) headers[headerStreamEncoding.toLowerCase()] = compression.name;
  let error: unknown;
  /** The connection, written directly (`toFramedEnvelope`). */
  let socket: Socket | null = null;
  try {
    const stream = await open(requestID, headerOf(request, "x-request-id"));
    // Opened even when the client is gone or the deadline passed meanwhile, as Connect's handler
    // (with an aborted signal) does: the new subscriber takes over and ends at once.
    reader = stream.read();
    if (gone || expired) reader.close();
    response.writeHead(200, headers);
    const connection = response.socket;
    socket = connection;
    // RFC 9112 §7.1 framing, when Node chose it for this response (it does for HTTP/1.1);
    // undefined on a Node that does not say: the response frames the messages itself.
    const chunked = toChunked(response);
    let headSent = false;
    /** Whether a message was written since the loop last found nothing to send. */
    let wrote = false;
    for (;;) {
      const message = reader.next();
      if (message === undefined) {
        if (reader.done) break;
        if (!headSent) {
          // Nothing to send with it: the head goes out on its own, now.
          response.flushHeaders();
          headSent = true;
        }
        flush(connection);
        if (wrote) {
          // What was just written is usually the first event of a burst: the runner applies all
          // the events of one network read in one chain of promise jobs. The first goes out at
          // once (time to first text); the rest are pulled once those jobs are done, still in
          // this turn of the event loop, so adjacent deltas go out joined, as one message and one
          // write, instead of one of each per delta (issue #19).
          wrote = false;
          await reader.waitForMore();
          continue;
        }
        await reader.wait();
        continue;
      }
      wrote = true;
      let data = toServerMessageBytes(message);
      let flags = 0;
      if (compression !== null && data.byteLength >= COMPRESS_MIN_BYTES) {
        flush(connection);
        data = await compression.compress(data);
        flags = compressedFlag;
      }
      if (gone || connection === null) break;
      // Corked until the loop finds nothing more to send (`flush`): the messages of one
      // synchronous run, and the head with the first, leave in one `writev`.
      if (connection.writableCorked === 0) connection.cork();
      if (!headSent) {
        response.flushHeaders();
        headSent = true;
      }
      const taken =
        chunked === undefined
          ? response.write(encodeEnvelope(flags, data))
          : connection.write(toFramedEnvelope(flags, data, chunked));
      if (!taken) {
        flush(connection);
        const flowing = await new Promise<boolean>((resolve) => {
          drained = resolve;
          connection.once("drain", onDrain);
        });
        drained = null;
        connection.off("drain", onDrain);
        // Not written: left undelivered for the next subscriber (`close` before `next`).
        if (!flowing) break;
      }
    }
    error = reader.error;
    held = reader.held;
  } catch (thrown) {
    error = thrown;
  } finally {
    flush(socket);
    clearTimeout(deadline);
    reader?.close();
    response.off("close", onClose);
  }
  if (gone) return;
  if (held) {
    // Shutdown, and this stream's turn goes on after it: no end of stream; the connection is
    // dropped with every other one, and the client reconnects (server.ts `close`).
    void responses.hold(response);
    return;
  }
  if (!response.headersSent) response.writeHead(200, headers);
  let end = END_STREAM.serialize({ metadata: new Headers(), error: toConnectError(error) });
  let flags = endStreamFlag;
  if (compression !== null && end.byteLength >= COMPRESS_MIN_BYTES) {
    end = await compression.compress(end);
    flags |= compressedFlag;
  }
  response.end(encodeEnvelope(flags, end));
}

/**
 * Sends what was written so far now: uncorks the socket, corked by the loop for the messages of
 * one synchronous run. Called before every wait. Node itself, writing through the response,
 * corks on a write and uncorks on the next tick, which comes only once the microtask queue is
 * empty: when a model's burst is applied in one chain of promise steps (runner, commits, the
 * turn's end), the first text's bytes waited for the whole chain — 1–2 ms of time to first text
 * in a measurement (issue #19).
 */
function flush(socket: Socket | null): void {
  if (socket !== null && socket.writableCorked > 0) socket.uncork();
}

/**
 * Whether Node frames this response's body in chunks (HTTP/1.1 without a content length), as
 * `writeHead` decided; undefined when Node does not say. Node's own property (not in its
 * documented API): the bytes written directly must be framed exactly as its own writes and its
 * `end` are, so a Node without it gets the messages through `response.write`.
 */
function toChunked(response: ServerResponse): boolean | undefined {
  const chunked = (response as ServerResponse & { chunkedEncoding?: unknown }).chunkedEncoding;
  return typeof chunked === "boolean" ? chunked : undefined;
}

/**
 * One Connect envelope (`flags`, `data`) as the bytes written to the socket: with `chunked`, as
 * one HTTP/1.1 chunk (`<size in hex>\r\n<envelope>\r\n`, RFC 9112 §7.1), the framing Node's
 * `response.write` adds — there as four socket writes, a tick and a hex string per message, here
 * one buffer from Node's pool (issue #19). The bytes are Connect's `encodeEnvelope`'s.
 */
export function toFramedEnvelope(flags: number, data: Uint8Array, chunked: boolean): Buffer {
  const size = 5 + data.byteLength;
  const head = chunked ? size.toString(16) : "";
  const out = Buffer.allocUnsafe(chunked ? head.length + 2 + size + 2 : size);
  let at = 0;
  if (chunked) {
    at = out.write(head, 0, "latin1");
    out[at++] = 13;
    out[at++] = 10;
  }
  out[at] = flags;
  out.writeUInt32BE(data.byteLength, at + 1);
  out.set(data, at + 5);
  if (chunked) {
    out[at + size] = 13;
    out[at + size + 1] = 10;
  }
  return out;
}

/**
 * Reads the rest of the request body after its first envelope: `sole` when it ends there,
 * `more` when bytes follow (they are put back, the envelope with them), `gone` when the
 * connection closes first.
 */
function readToEnd(
  request: IncomingMessage,
  envelopeBytes: number,
): Promise<"sole" | "more" | "gone"> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let have = 0;
    const finish = (result: "sole" | "more" | "gone"): void => {
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("close", onGone);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      have += chunk.length;
      if (have <= envelopeBytes) return;
      request.pause();
      request.unshift(Buffer.concat(chunks));
      finish("more");
    };
    const onEnd = (): void => finish("sole");
    const onGone = (): void => finish("gone");
    request.on("data", onData);
    request.once("end", onEnd);
    request.once("close", onGone);
    request.resume();
  });
}

/**
 * The request id of an uncompressed binary RunSSE envelope; null when it does not hold a request
 * id message (Connect itself would answer that `internal`); undefined for compressed or JSON
 * bodies, which are left to Connect.
 */
function toRunSseRequestID(
  request: Request,
  flags: number,
  payload: Buffer,
): string | null | undefined {
  const type = String(request.headers["content-type"] ?? "");
  if ((flags & compressedFlag) !== 0 || !type.startsWith("application/connect+proto")) {
    return undefined;
  }
  try {
    return fromBinary(BidiRequestIdSchema, payload).requestId;
  } catch {
    return null;
  }
}

/** HTTP/1.x: RunSSE's transport (docs/protocol.md §1.1); HTTP/2 requests go to Connect. */
function isHttp1(request: Request): request is IncomingMessage {
  return request.httpVersionMajor === 1;
}

/** Rewrites the Connect streaming content type of a RunSSE response to `text/event-stream`. */
function asEventStream(response: Response): void {
  const target = response as HeadWriter;
  const writeHead = target.writeHead.bind(target);
  target.writeHead = (status, headers) => {
    if (
      headers !== undefined &&
      String(headers["content-type"] ?? "").startsWith("application/connect+")
    ) {
      headers["content-type"] = "text/event-stream";
      headers["cache-control"] = headers["cache-control"] ?? "no-cache";
    }
    return writeHead(status, headers);
  };
}

interface HeadWriter {
  writeHead(status: number, headers?: Record<string, string | string[] | number>): unknown;
}

/** Connect's end-of-stream error for what the subscriber ended with (undefined: a clean end). */
function toConnectError(error: unknown): ConnectError | undefined {
  if (error === undefined || error instanceof ConnectError) return error;
  return new ConnectError("internal error", Code.Internal, undefined, undefined, error);
}

function headerOf(request: IncomingMessage, name: string): string | null {
  const value = request.headers[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(", ") : value;
}
