/**
 * The BidiAppend response written directly (docs/protocol.md §1.4, docs/architecture.md
 * "BidiAppend"), for the request every client sends: a POST over HTTP/1.1, `application/proto`,
 * uncompressed, with a `content-length` within the message limit or a chunked body (what
 * connect-es's Node transport sends), no `connect-timeout-ms`. Anything else (JSON, a compressed
 * body, HTTP/2, a time-out) is left to Connect's handler, its body unread; so is a chunked body
 * that turns out larger than the limit, its bytes put back first (`unshift`), so that Connect
 * reads and refuses it as it would have.
 *
 * Why not Connect's handler for this one procedure: every append (the run request that starts a
 * turn, every tool result) went through its unary pipeline, measured (issue #19): ≈0.2 ms between
 * dispatch and our handler on the time to first text, and ≈80 µs per request in the
 * `DOMException`s of its handler context's abort. Here the body is read, parsed and appended
 * (bidi-append-apply.ts, shared with Connect's route) and the answer written in one step.
 *
 * The bytes are Connect's (its unary handler, protocol-connect/handler-factory.js): the body is
 * parsed as its binary serialization does (a failure is `internal` "parse binary: …", which
 * client-faults.ts `asClientFault` turns into `invalid_argument` for both ways); success is status
 * 200, `application/proto` and the encoded (empty) `BidiAppendResponse`; an error is
 * `codeToHttpStatus`, `application/json` and `errorToJsonBytes`, with the error's metadata as
 * headers; the body is compressed with the codec `compressionNegotiate` picks when it reaches the
 * adapter's threshold; `content-length` always. bidi-append-response.test.ts compares both ways
 * byte for byte.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  mergeNonProtocolHeaders,
} from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  errorToJsonBytes,
  headerTimeout,
  headerUnaryAcceptEncoding,
  headerUnaryContentLength,
  headerUnaryEncoding,
  parseContentType,
} from "@connectrpc/connect/protocol-connect";
import type { ApplyBidiAppend } from "./bidi-append-apply.ts";
import { createBidiAppendReader, type ReadBidiAppend } from "./cursor/bidi-append-reader.ts";
import { BidiAppendRequestSchema } from "./cursor/gen/aiserver/v1/bidi_pb.js";
import type { RequestHandler } from "./http/listen.ts";
import type { Log } from "./log.ts";
import { COMPRESS_MIN_BYTES, CONNECT_COMPRESSION } from "./run-sse-response.ts";

/** The path BidiAppend is served under (its alias is rewritten to it first, server.ts). */
export const BIDI_APPEND_PATH = "/aiserver.v1.BidiService/BidiAppend";

/** `BidiAppendResponse` has no fields: its binary encoding is empty. */
const EMPTY_RESPONSE = new Uint8Array(0);

/**
 * The head of every successful append, as Connect writes it (`Headers` order, i.e. by name): made
 * once, not per append (issue #19). Node copies it; it is never changed.
 */
const SUCCESS_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  [headerUnaryContentLength.toLowerCase()]: "0",
  "content-type": contentTypeUnaryProto,
});

type Request = IncomingMessage | Http2ServerRequest;

export interface BidiAppendHandlerOptions {
  /** The append itself, shared with Connect's route (bidi-append-apply.ts). */
  readonly apply: ApplyBidiAppend;
  /** Connect's adapter, whose BidiAppend route serves what the direct responder leaves to it. */
  readonly connect: RequestHandler;
  /** `connect`: every BidiAppend through Connect's handler (for comparing; server.ts option). */
  readonly responder: "direct" | "connect";
  /** Connect's `readMaxBytes`: a larger announced body is left to Connect, which refuses it. */
  readonly maxMessageBytes: number;
  readonly log: Log;
}

/** Serves a BidiAppend request (after routing, host and token checks, server.ts). */
export function createBidiAppendHandler(options: BidiAppendHandlerOptions): RequestHandler {
  const { apply, connect, log, maxMessageBytes } = options;
  return (request, response) => {
    const direct =
      options.responder === "direct" && isHttp1(request)
        ? acceptsDirect(request, maxMessageBytes, () => connect(request, response))
        : null;
    if (direct === null) {
      connect(request, response);
      return;
    }
    serveBidiAppend(request as IncomingMessage, response as ServerResponse, direct, apply).catch(
      (error: unknown) => {
        // Not expected (every failure of the append is its error response): the client sees
        // the connection drop, as with a crash.
        log.error(
          { path: BIDI_APPEND_PATH, error: error instanceof Error ? error.message : String(error) },
          "BidiAppend response failed",
        );
        response.destroy();
      },
    );
  };
}

/** A BidiAppend request the direct responder serves, as `acceptsDirect` found it. */
interface DirectAppend {
  /** The response compression the client accepts, if any we have. */
  readonly compression: Compression | null;
  /**
   * A chunked body (no `content-length`): its size is known only once read, so it is handed to
   * Connect (`fallback`) if it goes over `maxMessageBytes`.
   */
  readonly chunked: boolean;
  readonly maxMessageBytes: number;
  readonly fallback: () => void;
}

/**
 * Whether the direct responder serves this request; null: leave it to Connect, which answers
 * whatever else a request can be (with its own checks, in its own order).
 */
function acceptsDirect(
  request: IncomingMessage,
  maxMessageBytes: number,
  fallback: () => void,
): DirectAppend | null {
  if (request.method !== "POST") return null;
  const type = parseContentType(headerOf(request, "content-type"));
  if (type === undefined || type.stream || !type.binary) return null;
  // Its deadline would abort the handler's signal: not reproduced, so left to Connect.
  if (request.headers[headerTimeout.toLowerCase()] !== undefined) return null;
  const length = headerOf(request, headerUnaryContentLength);
  const encoding = request.headers["transfer-encoding"];
  // Node's parser accepts a request with both only when it ends in `chunked`; leave it to Connect.
  const chunked = length === null && encoding?.toLowerCase() === "chunked";
  if (!chunked) {
    if (length === null || !/^\d{1,15}$/.test(length) || Number(length) > maxMessageBytes) {
      return null;
    }
    if (encoding !== undefined) return null;
  }
  const compression = compressionNegotiate(
    CONNECT_COMPRESSION as Compression[],
    headerOf(request, headerUnaryEncoding),
    headerOf(request, headerUnaryAcceptEncoding),
    headerUnaryAcceptEncoding,
  );
  if (compression.error !== undefined || compression.request !== null) return null;
  return { compression: compression.response, chunked, maxMessageBytes, fallback };
}

async function serveBidiAppend(
  request: IncomingMessage,
  response: ServerResponse,
  direct: DirectAppend,
  apply: ApplyBidiAppend,
): Promise<void> {
  const read = await readBody(request, direct.chunked ? direct.maxMessageBytes : Infinity);
  // The client went before its body arrived: Connect's answer would go nowhere either.
  if (read === null) return;
  if (read === "over") {
    direct.fallback();
    return;
  }
  let error: ConnectError | undefined;
  try {
    const header = headerOf(request, "x-request-id");
    if (read.type === "decoded") await apply(read.request, header, read.message);
    else await apply(parseRequest(read.body), header);
    await afterQueuedWork();
  } catch (thrown) {
    error =
      thrown instanceof ConnectError
        ? thrown
        : new ConnectError("internal error", Code.Internal, undefined, undefined, thrown);
  }
  if (error === undefined) {
    // The empty message is never compressed (under `COMPRESS_MIN_BYTES`): always these bytes.
    response.writeHead(200, SUCCESS_HEADERS);
    response.end(EMPTY_RESPONSE);
    return;
  }
  const header = new Headers({ "content-type": contentTypeUnaryJson });
  const status = codeToHttpStatus(error.code);
  // As Connect: an error relayed from the wire carries its payload, not its metadata.
  if (!error.isWireError) mergeNonProtocolHeaders(header, error.metadata);
  let body = errorToJsonBytes(error, undefined);
  const { compression } = direct;
  if (compression !== null && body.byteLength >= COMPRESS_MIN_BYTES) {
    body = await compression.compress(body);
    header.set(headerUnaryEncoding, compression.name);
  }
  header.set(headerUnaryContentLength, String(body.byteLength));
  // As connect-node: the headers in `Headers` order (sorted by name), then the body.
  const nodeHeaders: Record<string, string> = {};
  for (const [name, value] of header) nodeHeaders[name] = value;
  response.writeHead(status, nodeHeaders);
  response.end(body);
}

/**
 * Resolves in the event loop's check phase, after the immediates queued before it. An append that
 * starts a turn has by now released the model call. The default provider transport (node:http,
 * src/llm/http-fetch.ts) has written its request already (from process.nextTick); Node's fetch
 * (`CURSOR_BYOK_UPSTREAM_FETCH=global`) writes it from an immediate of its own (undici's check of
 * a kept-alive connection), which is what this waits for. Either way the answer, which no client
 * waits for before it reads RunSSE, is written after it, and its write (a loopback syscall that
 * wakes the client, ≈0.1–0.3 ms) is no longer on the time to first text (issue #19).
 */
function afterQueuedWork(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The request message, parsed as Connect's binary serialization does (same error). */
function parseRequest(bytes: Uint8Array) {
  try {
    return fromBinary(BidiAppendRequestSchema, bytes);
  } catch (error) {
    const m = error instanceof Error ? error.message : String(error);
    throw new ConnectError(`parse binary: ${m}`, Code.Internal);
  }
}

/**
 * The whole request body, its hex `data` decoded as it arrives (cursor/bidi-append-reader.ts);
 * null when the connection goes (or fails) before it ends; `over` when it grows past `limit`:
 * what was read is put back, unread, for Connect.
 */
function readBody(
  request: IncomingMessage,
  limit: number,
): Promise<ReadBidiAppend | null | "over"> {
  return new Promise((resolve) => {
    const reader = createBidiAppendReader();
    let have = 0;
    const finish = (result: ReadBidiAppend | null | "over"): void => {
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("close", onGone);
      request.off("error", onGone);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      have += chunk.length;
      if (have <= limit) {
        reader.push(chunk);
        return;
      }
      request.pause();
      request.unshift(Buffer.concat([reader.joined(), chunk]));
      finish("over");
    };
    const onEnd = (): void => finish(reader.end());
    const onGone = (): void => finish(null);
    request.on("data", onData);
    request.once("end", onEnd);
    request.once("close", onGone);
    request.once("error", onGone);
    request.resume();
  });
}

/** HTTP/1.x: the transport of the common request (docs/protocol.md §1.1). */
function isHttp1(request: Request): request is IncomingMessage {
  return request.httpVersionMajor === 1;
}

function headerOf(request: IncomingMessage, name: string): string | null {
  const value = request.headers[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(", ") : value;
}
