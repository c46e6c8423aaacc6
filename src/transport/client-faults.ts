/**
 * Requests that are the client's fault get a Connect error that says so, at once:
 *
 * - a body announced (`content-length`) larger than the server accepts is refused before a byte
 *   of it is read, with `resource_exhausted`, and the connection is closed (otherwise the server
 *   would wait for bytes it is going to refuse anyway);
 * - a unary body that is not the procedure's message, or not the gzip it claims to be, is
 *   `invalid_argument`: Connect itself calls it `internal` (HTTP 500), which reads as our fault.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";

type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

/** Room for envelope headers and compression around the largest message. */
const FRAMING_BYTES = 64 * 1024;

/**
 * Refuses `request` when its announced length exceeds what a message of `maxMessageBytes` needs;
 * returns whether it did (the response is then written).
 */
export function refuseOversized(
  request: Request,
  response: Response,
  maxMessageBytes: number,
): boolean {
  const announced = Number(request.headers["content-length"] ?? "0");
  if (!(announced > maxMessageBytes + FRAMING_BYTES)) return false;
  refuse(
    request,
    response,
    429,
    "resource_exhausted",
    `the request body announces ${announced} bytes; the most accepted is ${maxMessageBytes}`,
  );
  return true;
}

/**
 * Rewrites Connect's `internal` answer to a unary request whose body does not parse as the
 * procedure's message into `invalid_argument` (HTTP 400). Only an answer with status 500 is held
 * back to be inspected; every other response passes through untouched.
 */
export function asClientFault(response: Response, onRewrite: (detail: string) => void): void {
  const target = response as unknown as HeldResponse;
  const writeHead = target.writeHead.bind(target);
  const write = target.write.bind(target);
  const end = target.end.bind(target);
  let held: { headers: Record<string, unknown> } | null = null;
  const chunks: Buffer[] = [];
  target.writeHead = (status, ...rest) => {
    const headers = rest.find((value) => typeof value === "object" && value !== null);
    if (status !== 500) return writeHead(status, ...rest);
    held = { headers: { ...(headers as Record<string, unknown> | undefined) } };
    return target;
  };
  target.write = (chunk, ...rest) => {
    if (held === null) return write(chunk, ...rest);
    chunks.push(toBuffer(chunk));
    const callback = rest.find((value) => typeof value === "function");
    if (typeof callback === "function") queueMicrotask(() => (callback as () => void)());
    return true;
  };
  target.end = (...args) => {
    if (held === null) return end(...args);
    const first = args[0];
    if (first !== undefined && typeof first !== "function") chunks.push(toBuffer(first));
    let status = 500;
    let body: Buffer = Buffer.concat(chunks);
    const rewritten = toInvalidArgument(body);
    if (rewritten !== null) {
      status = 400;
      body = rewritten.body;
      onRewrite(rewritten.detail);
    }
    const headers = { ...held.headers };
    delete headers["content-length"];
    delete headers["Content-Length"];
    headers["content-length"] = String(body.length);
    held = null;
    writeHead(status, headers);
    return end(body);
  };
}

interface HeldResponse {
  writeHead(status: number, ...rest: unknown[]): unknown;
  write(chunk: unknown, ...rest: unknown[]): boolean;
  end(...args: unknown[]): unknown;
}

function toBuffer(chunk: unknown): Buffer {
  if (typeof chunk === "string") return Buffer.from(chunk);
  if (chunk instanceof Uint8Array) return Buffer.from(chunk);
  return Buffer.alloc(0);
}

/** The Connect error body for a parse failure as `invalid_argument`, or null for anything else. */
function toInvalidArgument(body: Buffer): { body: Buffer; detail: string } | null {
  let error: { code?: unknown; message?: unknown };
  try {
    error = JSON.parse(body.toString("utf8")) as typeof error;
  } catch {
    return null;
  }
  if (error.code !== "internal" || typeof error.message !== "string") return null;
  if (!/^(parse (binary|json)\b|decompression failed)/.test(error.message)) return null;
  const detail = error.message.slice(0, 200);
  return {
    body: Buffer.from(
      JSON.stringify({
        code: "invalid_argument",
        message: `the request body is not a valid message for this procedure (${detail})`,
      }),
    ),
    detail,
  };
}

/** What the first envelope of a streaming request says, once it has arrived. */
export type EnvelopeCheck =
  /** `flags` and `payload` of the first envelope (the bytes are also put back for Connect). */
  | { readonly type: "ok"; readonly flags: number; readonly payload: Buffer }
  | { readonly type: "too_large"; readonly announced: number }
  | { readonly type: "truncated" }
  | { readonly type: "gone" };

/**
 * Waits for the first envelope (5-byte header, then the payload it announces) of a streaming
 * request body and puts the bytes back for Connect to read. An envelope announcing more than
 * `maxMessageBytes` is refused as soon as its header arrives, instead of waiting for bytes that
 * will be refused anyway; one that does not arrive whole within `timeoutMs`, or a body that ends
 * first, is `truncated`; a connection that closes is `gone`.
 */
export function checkFirstEnvelope(
  request: Request,
  maxMessageBytes: number,
  timeoutMs: number,
): Promise<EnvelopeCheck> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let have = 0;
    const finish = (check: EnvelopeCheck, putBack: boolean): void => {
      clearTimeout(timer);
      request.off("data", onData);
      request.off("end", onEnd);
      request.off("close", onClose);
      if (putBack) {
        request.pause();
        request.unshift(Buffer.concat(chunks));
      }
      resolve(check);
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      have += chunk.length;
      if (have < 5) return;
      const head = chunks.length === 1 ? chunk : Buffer.concat(chunks);
      const announced = head.readUInt32BE(1);
      if (announced > maxMessageBytes) finish({ type: "too_large", announced }, false);
      else if (have >= 5 + announced) {
        const whole = Buffer.concat(chunks);
        const payload = whole.subarray(5, 5 + announced);
        finish({ type: "ok", flags: whole.readUInt8(0), payload }, true);
      }
    };
    const onEnd = (): void => finish({ type: "truncated" }, false);
    const onClose = (): void => finish({ type: "gone" }, false);
    const timer = setTimeout(() => finish({ type: "truncated" }, false), timeoutMs);
    timer.unref();
    request.on("data", onData);
    request.once("end", onEnd);
    request.once("close", onClose);
  });
}

/**
 * Writes a Connect error as a plain HTTP answer (a Connect client reads it for streaming calls
 * too); HTTP/1.1 connections are then closed, since the rest of the body is not read.
 */
export function refuse(
  request: Request,
  response: Response,
  status: 400 | 429,
  code: "invalid_argument" | "resource_exhausted",
  message: string,
): void {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (request.httpVersion === "1.1" || request.httpVersion === "1.0") headers.connection = "close";
  const target = response as unknown as HeldResponse;
  target.writeHead(status, headers);
  target.end(JSON.stringify({ code, message }));
}
