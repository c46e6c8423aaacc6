/**
 * A `fetch` for the provider calls on `node:http` / `node:https` (issue #19): the same request
 * and the same `Response` as Node's global fetch (undici) for what the exact fetch
 * (exact-fetch.ts) asks of it, at about half the memory per streaming call in flight (≈ 12 vs
 * ≈ 25 KiB of heap measured for a call stalled after its first chunk; no Request object, fetch
 * controller, header lists or undici client per call).
 *
 * What it keeps of fetch, and where it differs (docs: src/llm/README.md, "HTTP transport"):
 * - The response is a real `Response` (status, statusText, ok, web `Headers`, `url`, `text()`,
 *   `json()`) whose body is a web `ReadableStream` fed from the socket with backpressure (the
 *   socket is paused while more than `HIGH_WATER` bytes wait unread).
 * - Errors as fetch has them: before the response, `TypeError("fetch failed")` whose `cause` is
 *   the socket's error (with its `code`: ECONNREFUSED, ECONNRESET, …); a body cut off,
 *   `TypeError("terminated")` with the cause. An abort rejects (or errors the body) with the
 *   signal's reason, and the socket is destroyed.
 * - Redirects are never followed: a 3xx redirect status fails as fetch's `redirect: "error"`
 *   does (cause "unexpected redirect"), except with `redirect: "manual"`, which returns it. The
 *   exact fetch always asks for "error" (a followed redirect would send the body elsewhere).
 * - `accept-encoding: identity` unless the caller sets one: a compressed stream would cost a
 *   decompressor (≈ 40 KiB native) per call, for token streams that barely compress. A response
 *   compressed all the same (gzip, deflate, br) is decoded, as fetch does.
 * - No data for `timeoutMs` (300 s, undici's headers and body timeouts) fails the call with
 *   undici's error codes (UND_ERR_HEADERS_TIMEOUT / UND_ERR_BODY_TIMEOUT). A connection not
 *   usable within `connectTimeoutMs` (10 s, undici's connectTimeout: DNS, TCP connect, the proxy
 *   tunnel and the TLS handshake) fails it as "fetch failed" with UND_ERR_CONNECT_TIMEOUT, so a
 *   black-holed provider is retried and failed over after 10 s, not after the kernel's ≈ 130 s.
 * - A connection the provider closes mid-body fails the reader with "terminated", cause "other
 *   side closed" (code ECONNRESET), as undici words it (Node's own word is "aborted", which reads
 *   as the user's cancel).
 * - Kept-alive connections per origin (one agent per protocol; idle sockets closed after 4 s, as
 *   undici does), TLS with Node's default CA store (NODE_EXTRA_CA_CERTS, --use-system-ca), and
 *   HTTP(S)_PROXY / NO_PROXY exactly when Node's own HTTP client honours them
 *   (NODE_USE_ENV_PROXY=1 or --use-env-proxy: the global agent's `proxyEnv`).
 * - Request headers and body bytes are sent as given; fetch's default headers are added when the
 *   caller has not set them (accept, accept-language, sec-fetch-mode, user-agent), a string body
 *   without a content type gets fetch's `text/plain;charset=UTF-8`. A body stream without a
 *   content-length is sent chunked, as fetch does.
 */
import http, { type ClientRequest, type IncomingMessage } from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import type { TLSSocket } from "node:tls";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

export interface HttpFetchOptions {
  /** Headers or body silent for longer than this fail the call (default 300 s, as undici). */
  readonly timeoutMs?: number;
  /**
   * A connection (DNS, TCP, proxy tunnel, TLS handshake) not usable within this fails the call
   * (default 10 s, undici's connectTimeout).
   */
  readonly connectTimeoutMs?: number;
  /**
   * Proxy variables (HTTP_PROXY, HTTPS_PROXY, NO_PROXY and lower-case forms), as `http.Agent`'s
   * `proxyEnv`. Default: what Node's global agent uses (set by NODE_USE_ENV_PROXY=1 or
   * --use-env-proxy; none otherwise).
   */
  readonly proxyEnv?: NodeJS.ProcessEnv;
  /** Idle kept-alive connections are closed after this (default 4 s, as undici). */
  readonly keepAliveMs?: number;
  /** Extra TLS options for https origins (tests: a loopback server's CA). */
  readonly tls?: https.AgentOptions;
}

export interface HttpFetch {
  readonly fetch: typeof fetch;
  /** Closes every connection, idle or in use (tests, shutdown). */
  readonly close: () => void;
}

const DEFAULT_TIMEOUT_MS = 300_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const HIGH_WATER = 64 * 1024;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** fetch's default request headers, added when the caller has not set them. */
const DEFAULT_HEADERS: readonly (readonly [string, string])[] = [
  ["accept", "*/*"],
  ["accept-language", "*"],
  ["sec-fetch-mode", "cors"],
  ["user-agent", "node"],
  ["accept-encoding", "identity"],
];

export function createHttpFetch(options: HttpFetchOptions = {}): HttpFetch {
  const timings: Timings = {
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
  };
  const proxyEnv = options.proxyEnv ?? globalProxyEnv();
  const agentOptions = {
    keepAlive: true,
    // TCP keep-alive probes after 60 s of silence, as undici (Node's default 1 s would probe
    // every silent stream, and kill one during a ≈ 10 s network blip while the model thinks).
    keepAliveMsecs: 60_000,
    scheduling: "lifo" as const,
    timeout: options.keepAliveMs ?? 4_000,
    ...(proxyEnv === undefined ? {} : { proxyEnv }),
  };
  const agents = {
    http: new http.Agent(agentOptions),
    https: new https.Agent({ ...options.tls, ...agentOptions }),
    proxied: proxyEnv !== undefined,
  };
  const send = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
    httpFetch(input, init ?? {}, agents, timings);
  return {
    fetch: send as typeof fetch,
    close: () => {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/**
 * Why this transport would not proxy a provider call that Node's fetch proxies, or undefined.
 * Node's fetch honours NODE_USE_ENV_PROXY=1 / --use-env-proxy from Node 24.0, its HTTP agents only
 * from 24.5 (the global agent's `proxyEnv`, which `createHttpFetch` takes over); on an older Node,
 * or one whose global agent no longer shows its `proxyEnv`, the caller uses Node's fetch instead
 * (llm.ts), rather than sending the call around the proxy.
 */
export function envProxyGap(
  env: Readonly<Record<string, string | undefined>>,
  execArgv: readonly string[] = process.execArgv,
  agent: http.Agent = http.globalAgent,
): string | undefined {
  const asked =
    env.NODE_USE_ENV_PROXY === "1" ||
    execArgv.includes("--use-env-proxy") ||
    (env.NODE_OPTIONS ?? "").split(/\s+/).includes("--use-env-proxy");
  if (!asked || globalProxyEnv(agent) !== undefined) return undefined;
  return (
    `NODE_USE_ENV_PROXY / --use-env-proxy is set, but Node ${process.version}'s HTTP agent ` +
    "takes no proxy from it (Node >= 24.5 does): provider calls go over Node's fetch instead"
  );
}

/** The proxy variables Node's own global agent was made with (undefined when not enabled). */
function globalProxyEnv(agent: http.Agent = http.globalAgent): NodeJS.ProcessEnv | undefined {
  // `options` is not in Node's documented API (nor in @types/node): read defensively; a Node
  // without it is caught by `envProxyGap` and the call goes over Node's fetch.
  const made = (agent as http.Agent & { options?: { proxyEnv?: unknown } }).options;
  const env = made?.proxyEnv;
  return typeof env === "object" && env !== null ? (env as NodeJS.ProcessEnv) : undefined;
}

interface Timings {
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
}

interface Agents {
  readonly http: http.Agent;
  readonly https: https.Agent;
  /** Whether the agents take a proxy from the environment (`proxyEnv`). */
  readonly proxied: boolean;
}

async function httpFetch(
  input: string | URL | Request,
  init: RequestInit,
  agents: Agents,
  timings: Timings,
): Promise<Response> {
  if (input instanceof Request) {
    throw new TypeError("the HTTP transport takes a URL and a RequestInit, not a Request");
  }
  const url = new URL(input);
  const secure = url.protocol === "https:";
  if (!secure && url.protocol !== "http:") {
    throw new TypeError("fetch failed", { cause: new Error(`unsupported scheme ${url.protocol}`) });
  }
  const signal = init.signal ?? undefined;
  signal?.throwIfAborted();
  const body = await toSendable(init.body ?? null);
  // Encoding a Blob or FormData body waits: the signal may have fired meanwhile.
  signal?.throwIfAborted();
  const method = init.method ?? "GET";
  const headers = toHeaders(init.headers, body, method, url, agents.proxied);
  const request = (secure ? https : http).request(url, {
    method,
    headers,
    agent: secure ? agents.https : agents.http,
    // Until the request has its socket this is also the proxy tunnel's timeout (Node uses the
    // request's for the CONNECT): a stalled tunnel is closed, not kept for 300 s.
    timeout: Math.min(timings.connectTimeoutMs, timings.timeoutMs),
  });
  // Written into the request's head by now; Node's agent keeps the options, list and all, for
  // the socket's life (≈ 0.4 KiB on an open stream, issue #19).
  if (Array.isArray(headers)) headers.length = 0;
  const answer = exchange(request, signal, timings, {
    href: url.href,
    manual: init.redirect === "manual",
    head: init.method?.toUpperCase() === "HEAD",
  });
  void sendBody(request, body.data).catch((error: unknown) => request.destroy(toError(error)));
  return answer;
}

/**
 * Calls `onTimeout` (which fails the call) unless `request` has a usable connection within
 * `timings.connectTimeoutMs`. Started when the request is made, so it also covers the proxy
 * tunnel: with a proxy Node hands out the socket (the request's 'socket' event) only once the
 * tunnel and the TLS handshake through it are done. The timer is cleared on every path: usable,
 * or the request closed (error, abort, timeout); nothing of this is kept for the rest of a long
 * stream. On the socket, the request's timeout becomes the idle timeout (`timings.timeoutMs`).
 */
function awaitConnection(
  request: ClientRequest,
  timings: Timings,
  onTimeout: (error: Error) => void,
): void {
  const { connectTimeoutMs } = timings;
  const timer = setTimeout(
    () => onTimeout(connectTimeoutError(connectTimeoutMs)),
    connectTimeoutMs,
  );
  const stop = () => clearTimeout(timer);
  const usable = () => {
    stop();
    request.off("close", stop);
  };
  request.once("close", stop);
  request.once("socket", (socket: Socket) => {
    request.setTimeout(timings.timeoutMs);
    if (isUsable(socket)) usable();
    else if (isTls(socket)) socket.once("secureConnect", usable);
    else socket.once("connect", usable);
  });
}

/**
 * Connected, and for TLS with the handshake done (the peer's Finished message has come: a
 * kept-alive socket, or one Node tunnelled through a proxy and handed out after its handshake).
 */
function isUsable(socket: Socket): boolean {
  return !socket.connecting && (!isTls(socket) || socket.getPeerFinished() !== undefined);
}

function isTls(socket: Socket): socket is TLSSocket {
  return (socket as Partial<TLSSocket>).encrypted === true;
}

/**
 * The response of a sent `request`. Its own function so that what the request's listeners keep
 * for the call's life is only this (not the `RequestInit` and its body).
 */
function exchange(
  request: ClientRequest,
  signal: AbortSignal | undefined,
  timings: Timings,
  asked: { readonly href: string; readonly manual: boolean; readonly head: boolean },
): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    /** Set once the response has come: where later failures go. */
    let fail: ((error: unknown) => void) | undefined;
    const onAbort = () => {
      const reason: unknown = signal?.reason;
      request.destroy();
      if (fail !== undefined) fail(reason);
      else if (!settled) {
        settled = true;
        reject(reason);
      }
    };
    const unlisten = () => signal?.removeEventListener("abort", onAbort);
    signal?.addEventListener("abort", onAbort, { once: true });
    const onError = (error: Error) => {
      unlisten();
      if (fail !== undefined) fail(new TypeError("terminated", { cause: closedError(error) }));
      else if (!settled) {
        settled = true;
        reject(new TypeError("fetch failed", { cause: error }));
      }
    };
    request.on("error", onError);
    // Failed here, not by the request's 'error': a request still waiting for its proxy tunnel
    // has no socket, and Node emits the error only once one comes.
    awaitConnection(request, timings, (error) => {
      request.destroy(error);
      onError(error);
    });
    request.on("timeout", () => {
      // Before the connection is usable the request's timeout is the connect timeout (above).
      const socket = request.socket;
      if (socket !== null && !isUsable(socket)) {
        request.destroy(connectTimeoutError(timings.connectTimeoutMs));
      } else request.destroy(timeoutError(fail === undefined ? "headers" : "body"));
    });
    request.on("response", (response) => {
      if (settled) {
        response.destroy();
        return;
      }
      const status = response.statusCode ?? 0;
      if (REDIRECTS.has(status) && !asked.manual) {
        settled = true;
        unlisten();
        request.destroy();
        reject(new TypeError("fetch failed", { cause: new Error("unexpected redirect") }));
        return;
      }
      settled = true;
      const responseHeaders = new Headers();
      const raw = response.rawHeaders;
      for (let index = 0; index + 1 < raw.length; index += 2) {
        responseHeaders.append(raw[index] as string, raw[index + 1] as string);
      }
      const source = NULL_BODY.has(status) || asked.head ? null : decoded(response);
      let stream: ReadableStream<Uint8Array> | null = null;
      if (source === null) {
        unlisten();
        response.resume();
      } else {
        const piped = toWebStream(source, response, unlisten);
        stream = piped.stream;
        fail = piped.fail;
      }
      let made: Response;
      try {
        made = new Response(stream, {
          status,
          statusText: response.statusMessage ?? "",
          headers: responseHeaders,
        });
      } catch (error) {
        request.destroy();
        unlisten();
        reject(new TypeError("fetch failed", { cause: error }));
        return;
      }
      Object.defineProperty(made, "url", { value: asked.href, enumerable: true });
      resolve(made);
    });
  });
}

/**
 * The response body as a web stream. `source` is the response or its decoder. A chunk that comes
 * while the reader waits is handed on as it is; chunks that come while it is busy are parked and
 * handed on as one at its next read (as undici does: one read per socket read, not per HTTP
 * chunk, which for an unpaced SSE stream is a read per event), and the socket is paused once
 * `HIGH_WATER` bytes are parked. `fail` errors the stream (abort, socket error, timeout).
 */
function toWebStream(
  source: Readable,
  response: IncomingMessage,
  done: () => void,
): { readonly stream: ReadableStream<Uint8Array>; readonly fail: (error: unknown) => void } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  /** A read is pending (with a high-water mark of 0, `pull` means exactly that). */
  let waiting = false;
  let parked: Buffer[] = [];
  let parkedBytes = 0;
  const finish = () => {
    open = false;
    parked = [];
    done();
  };
  const fail = (error: unknown) => {
    if (!open) return;
    finish();
    controller.error(error);
    response.destroy();
    if (source !== response) source.destroy();
  };
  const unpark = (): Uint8Array => {
    const chunk = parked.length === 1 ? (parked[0] as Buffer) : joined(parked, parkedBytes);
    parked = [];
    parkedBytes = 0;
    return chunk;
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start: (made) => {
        controller = made;
      },
      pull: () => {
        if (parkedBytes > 0) controller.enqueue(unpark());
        else waiting = true;
        if (source.isPaused()) source.resume();
      },
      cancel: () => {
        if (!open) return;
        finish();
        response.destroy();
        if (source !== response) source.destroy();
      },
    },
    { highWaterMark: 0 },
  );
  source.on("data", (chunk: Buffer) => {
    if (!open) return;
    if (waiting) {
      waiting = false;
      controller.enqueue(chunk);
      return;
    }
    parked.push(chunk);
    parkedBytes += chunk.length;
    if (parkedBytes >= HIGH_WATER) source.pause();
  });
  source.on("end", () => {
    if (!open) return;
    if (parkedBytes > 0) controller.enqueue(unpark());
    finish();
    controller.close();
  });
  source.on("error", (error) => {
    fail(isTyped(error) ? error : new TypeError("terminated", { cause: closedError(error) }));
  });
  if (source !== response) {
    response.on("error", (error) =>
      fail(new TypeError("terminated", { cause: closedError(error) })),
    );
  }
  return { stream, fail };
}

/** The chunks as one, in memory of its own (not a slice of Node's shared pool, which it would pin). */
function joined(chunks: readonly Buffer[], bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

function isTyped(error: unknown): boolean {
  return error instanceof TypeError && error.message === "terminated";
}

/** The response, through a decoder when it is compressed (gzip, deflate, br; others as sent). */
function decoded(response: IncomingMessage): Readable {
  const encoding = response.headers["content-encoding"]?.trim().toLowerCase();
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : undefined;
  if (decoder === undefined) return response;
  return response.pipe(decoder);
}

/** A request body: bytes or a stream of them, and the content type fetch would give it. */
interface Sendable {
  readonly data: string | Uint8Array | ReadableStream<Uint8Array> | null;
  readonly type: string | null;
}

/** The body as it is sent: strings, bytes and streams as they are, other kinds as fetch encodes them. */
async function toSendable(body: NonNullable<RequestInit["body"]> | null): Promise<Sendable> {
  if (body === null) return { data: null, type: null };
  if (typeof body === "string") return { data: body, type: "text/plain;charset=UTF-8" };
  if (body instanceof ArrayBuffer) return { data: new Uint8Array(body), type: null };
  if (ArrayBuffer.isView(body)) {
    return { data: new Uint8Array(body.buffer, body.byteOffset, body.byteLength), type: null };
  }
  if (body instanceof ReadableStream)
    return { data: body as ReadableStream<Uint8Array>, type: null };
  // Blob, FormData, URLSearchParams: encoded (and typed) as a Response would encode them.
  const encoded = new Response(body);
  const type = encoded.headers.get("content-type");
  return { data: new Uint8Array(await encoded.arrayBuffer()), type };
}

/**
 * The request headers as given, plus fetch's defaults where the caller set none, as Node's flat
 * `[name, value, …]` list, Host included (Node adds none to a list): Node writes a list into the
 * request head at once, where an object would also be kept, header by header, for the life of
 * the request, ≈ 1.5 KiB for a provider SDK's twenty headers on every open stream (issue #19).
 * As an object when a proxy may take the request (Node adds a plain-HTTP proxy's headers to the
 * kept ones, which a list bypasses) or when the caller set a Host header.
 */
function toHeaders(
  init: RequestInit["headers"],
  body: Sendable,
  method: string,
  url: URL,
  proxied: boolean,
): string[] | Record<string, string> {
  const headers = new Headers(init);
  for (const [name, value] of DEFAULT_HEADERS) {
    if (!headers.has(name)) headers.set(name, value);
  }
  if (body.type !== null && !headers.has("content-type")) headers.set("content-type", body.type);
  const framing = headers.has("content-length") ? "given" : toFraming(body.data, method);
  // Node derives a TLS server name from a Host header it was given as an object, and frames a
  // body from what it sees of it (`expect`, `transfer-encoding`, a stream's end, a body on a
  // method that has none by default): those requests keep the object.
  if (
    proxied ||
    framing === "node" ||
    headers.has("host") ||
    headers.has("expect") ||
    headers.has("transfer-encoding")
  ) {
    const sent: Record<string, string> = {};
    for (const [name, value] of headers) sent[name] = value;
    return sent;
  }
  const sent: string[] = [];
  for (const [name, value] of headers) sent.push(name, value);
  // As Node adds them to an object's: the host (bracketed when IPv6, with the port unless the
  // default), and the length of a body it is handed whole.
  sent.push("host", url.host);
  if (typeof framing === "number") sent.push("content-length", String(framing));
  return sent;
}

/**
 * Methods Node sends no body headers for when no body is given (`useChunkedEncodingByDefault`
 * false); any other gets `content-length: 0`.
 */
const BODILESS_METHODS = new Set(["GET", "HEAD", "DELETE", "OPTIONS", "TRACE", "CONNECT"]);

/**
 * How Node frames a request without a `content-length` header, when that is known before the body
 * is sent: the length of a body handed to `end()` whole, or "none" (no body headers); "node" when
 * it depends on the body as it comes (a stream, a body on a bodiless method).
 */
function toFraming(data: Sendable["data"], method: string): number | "none" | "node" {
  const bodiless = BODILESS_METHODS.has(method.toUpperCase());
  if (data === null) return bodiless ? "none" : 0;
  if (bodiless) return "node";
  if (typeof data === "string") return Buffer.byteLength(data, "utf8");
  if (data instanceof Uint8Array) return data.byteLength;
  return "node";
}

/** Writes the body and ends the request; a stream chunk by chunk, waiting for drain. */
async function sendBody(request: ClientRequest, body: Sendable["data"]): Promise<void> {
  if (body === null || typeof body === "string" || body instanceof Uint8Array) {
    request.end(body ?? undefined);
    return;
  }
  const reader = body.getReader();
  // A request destroyed meanwhile (abort, error) stops a read that may never end.
  const stop = () => void reader.cancel().catch(() => undefined);
  request.once("close", stop);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (request.destroyed) return;
      if (!request.write(value)) {
        await new Promise<void>((resolve) => {
          request.once("drain", resolve);
          request.once("close", resolve);
        });
      }
    }
  } finally {
    request.off("close", stop);
    reader.releaseLock();
  }
  if (!request.destroyed) request.end();
}

function timeoutError(phase: "headers" | "body"): Error {
  const error = new Error(phase === "headers" ? "Headers Timeout Error" : "Body Timeout Error");
  error.name = phase === "headers" ? "HeadersTimeoutError" : "BodyTimeoutError";
  (error as Error & { code: string }).code =
    phase === "headers" ? "UND_ERR_HEADERS_TIMEOUT" : "UND_ERR_BODY_TIMEOUT";
  return error;
}

function connectTimeoutError(timeoutMs: number): Error {
  const error = new Error(`Connect Timeout Error (timeout: ${timeoutMs}ms)`);
  error.name = "ConnectTimeoutError";
  (error as Error & { code: string }).code = "UND_ERR_CONNECT_TIMEOUT";
  return error;
}

/**
 * A response cut off by the other side: Node's IncomingMessage says "aborted" (code ECONNRESET),
 * which pi-ai appends to the error as the deepest cause and which reads as the user's cancel.
 * Reworded as undici words it, the code kept, no cause below it.
 */
function closedError(error: Error): Error {
  const code = (error as Error & { code?: unknown }).code;
  if (error.message !== "aborted" || code !== "ECONNRESET") return error;
  return Object.assign(new Error("other side closed"), { code });
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
