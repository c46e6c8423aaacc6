/**
 * Forwarding a decrypted request to the real host, unchanged: method, path, headers (the user's
 * own `authorization` included) and body; the response streamed back chunk by chunk as it
 * arrives, trailers kept. HTTP/2 upstream when the client spoke HTTP/2, HTTP/1.1 otherwise.
 * Upstream TLS is verified against the trust roots given (the system's by default).
 *
 * When the upstream cannot be reached, the client gets an error it can read in its own protocol
 * (docs/ide.md): Connect streaming → an end-stream message, gRPC → `grpc-status`, anything else
 * → a Connect unary error (HTTP 503 + JSON) — `unavailable`, naming the host. Never a hang.
 */

import type { ServerResponse } from "node:http";
import http, {
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from "node:http";
import http2, { type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import https from "node:https";
import tls from "node:tls";

export type ProxiedRequest = IncomingMessage | Http2ServerRequest;
export type ProxiedResponse = ServerResponse | Http2ServerResponse;

/** Where a host's traffic really goes: the host itself, or (tests) a local stand-in. */
export type UpstreamResolver = (host: string, port: number) => { host: string; port: number };

export interface UpstreamOptions {
  readonly resolve: UpstreamResolver;
  /** Trusted roots for upstream TLS (PEM). */
  readonly ca: readonly string[];
  /** How long connecting (TCP + TLS) may take. */
  readonly connectTimeoutMs: number;
}

/** Headers that describe one hop, not the request (RFC 9110 §7.6.1), plus HTTP/2 pseudo-headers. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
  "host",
]);

const IDLE_UPSTREAM_MS = 60_000;

export interface ForwardTarget {
  readonly host: string;
  readonly port: number;
  readonly secure: boolean;
  /** The path to request, when the request's own URL is in absolute form. */
  readonly path?: string;
  /** The `host` / `:authority` to send; default the request's own (the real host's name). */
  readonly authority?: string;
  /** Changes the forwarded end-to-end headers (the team relay puts the user's token in). */
  readonly rewriteHeaders?: (
    headers: Record<string, string | string[]>,
  ) => Record<string, string | string[]>;
}

export interface Forwarder {
  forward(request: ProxiedRequest, response: ProxiedResponse, target: ForwardTarget): void;
  close(): void;
}

export function createForwarder(options: UpstreamOptions): Forwarder {
  // Parsing the trust roots costs milliseconds of CPU: once, not per connection.
  const secureContext = tls.createSecureContext({ ca: [...options.ca] });
  // Idle pooled connections are dropped after a minute, so a sleep or a network change does
  // not leave requests waiting on a connection that is gone.
  const agent = new https.Agent({
    keepAlive: true,
    maxFreeSockets: 16,
    timeout: IDLE_UPSTREAM_MS,
    secureContext,
  });
  const plainAgent = new http.Agent({
    keepAlive: true,
    maxFreeSockets: 16,
    timeout: IDLE_UPSTREAM_MS,
  });
  const sessions = new Map<string, Promise<http2.ClientHttp2Session | undefined>>();
  /** Hosts whose server offered no HTTP/2: requests to them go as HTTP/1.1. */
  const http1Only = new Set<string>();

  /** An HTTP/2 session to the host, or `undefined` when it speaks HTTP/1.1 only. */
  const connectSession = (host: string, port: number, key: string) =>
    new Promise<http2.ClientHttp2Session | undefined>((resolve, reject) => {
      const to = options.resolve(host, port);
      // Connect to the resolved address while verifying the certificate for `host`.
      const socket = tls.connect({
        host: to.host,
        port: to.port,
        servername: host,
        secureContext,
        ALPNProtocols: ["h2", "http/1.1"],
      });
      socket.setNoDelay(true);
      const timer = setTimeout(() => {
        socket.destroy(new Error(`no connection within ${options.connectTimeoutMs} ms`));
      }, options.connectTimeoutMs);
      socket.once("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      socket.once("secureConnect", () => {
        clearTimeout(timer);
        if (socket.alpnProtocol !== "h2") {
          socket.destroy();
          http1Only.add(key);
          resolve(undefined);
          return;
        }
        const session = http2.connect(`https://${host}:${port}`, {
          createConnection: () => socket,
        });
        const forget = () => sessions.delete(key);
        session.on("error", forget);
        session.on("close", forget);
        session.on("goaway", forget);
        session.setTimeout(IDLE_UPSTREAM_MS, () => session.close());
        session.unref();
        resolve(session);
      });
    });

  const sessionFor = (host: string, port: number) => {
    const key = `${host}:${port}`;
    const open = sessions.get(key);
    if (open !== undefined) return open;
    const opening = connectSession(host, port, key);
    sessions.set(key, opening);
    opening.then(
      (session) => {
        if (session === undefined) sessions.delete(key);
      },
      () => sessions.delete(key),
    );
    return opening;
  };

  const forwardH2 = async (
    request: Http2ServerRequest,
    response: Http2ServerResponse,
    target: ForwardTarget,
  ): Promise<void> => {
    const { host, port } = target;
    let clientGone = false;
    response.once("close", () => {
      clientGone = true;
    });
    let session: http2.ClientHttp2Session | undefined;
    try {
      session = await sessionFor(host, port);
      if (session?.closed === true || session?.destroyed === true) {
        sessions.delete(`${host}:${port}`);
        session = await sessionFor(host, port);
      }
    } catch (error) {
      answerUnavailable(request, response, host, error);
      return;
    }
    if (clientGone) return;
    if (session === undefined) {
      forwardH1(request, response, target);
      return;
    }
    const rewrite = target.rewriteHeaders ?? ((same) => same);
    const headers: OutgoingHttpHeaders = {
      ...rewrite(toForwardedHeaders(request.headers)),
      ":method": request.method,
      ":path": request.url,
      ":authority": target.authority ?? request.headers[":authority"] ?? host,
      ":scheme": "https",
    };
    let upstream: http2.ClientHttp2Stream;
    try {
      upstream = session.request(headers, { endStream: false });
    } catch (error) {
      answerUnavailable(request, response, host, error);
      return;
    }
    // No time limit on the answer itself: a slow unary call is the real host's business, and
    // the client ends the exchange when it gives up (then so do we).
    upstream.once("response", (upstreamHeaders) => {
      const status = Number(upstreamHeaders[":status"] ?? 502);
      response.writeHead(status, toForwardedHeaders(upstreamHeaders) as OutgoingHttpHeaders);
      flush(response);
    });
    upstream.on("trailers", (trailers) => {
      response.addTrailers(toForwardedHeaders(trailers) as Record<string, string>);
    });
    // `pipe` waits for the client to drain before reading more (no unbounded buffering); the
    // end is ours to write, after the trailers.
    upstream.pipe(response as unknown as NodeJS.WritableStream, { end: false });
    upstream.once("end", () => response.end());
    upstream.once("error", (error) => {
      if (response.headersSent) response.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      else answerUnavailable(request, response, host, error);
    });
    request.pipe(upstream);
    response.once("close", () => {
      if (!upstream.closed) upstream.close(http2.constants.NGHTTP2_CANCEL);
    });
  };

  const forwardH1 = (
    request: ProxiedRequest,
    response: ProxiedResponse,
    target: ForwardTarget,
  ): void => {
    const to = options.resolve(target.host, target.port);
    const authority =
      target.authority ??
      String(request.headers.host ?? request.headers[":authority"] ?? target.host);
    const rewrite = target.rewriteHeaders ?? ((same) => same);
    const requestOptions: https.RequestOptions = {
      method: request.method,
      path: target.path ?? request.url,
      host: to.host,
      port: to.port,
      headers: { ...rewrite(toForwardedHeaders(request.headers)), host: authority },
    };
    const upstream = target.secure
      ? https.request({ ...requestOptions, agent, servername: target.host })
      : http.request({ ...requestOptions, agent: plainAgent });
    // Only connecting is time-limited (see forwardH2 for why the answer is not).
    upstream.once("socket", (socket) => {
      // Streams are many small writes: none may wait for the peer's delayed ACK.
      socket.setNoDelay(true);
      if (!socket.connecting) return;
      const timer = setTimeout(() => {
        upstream.destroy(new Error(`no connection within ${options.connectTimeoutMs} ms`));
      }, options.connectTimeoutMs);
      socket.once(target.secure ? "secureConnect" : "connect", () => clearTimeout(timer));
      socket.once("close", () => clearTimeout(timer));
    });
    upstream.once("response", (upstreamResponse) => {
      const headers = toForwardedHeaders(upstreamResponse.headers);
      (response as ServerResponse).writeHead(
        upstreamResponse.statusCode ?? 502,
        headers as OutgoingHttpHeaders,
      );
      flush(response);
      upstreamResponse.pipe(response as unknown as NodeJS.WritableStream, { end: false });
      upstreamResponse.once("end", () => {
        if (Object.keys(upstreamResponse.trailers).length > 0) {
          response.addTrailers(upstreamResponse.trailers as Record<string, string>);
        }
        response.end();
      });
      upstreamResponse.once("error", () => response.destroy());
    });
    upstream.once("error", (error) => {
      if (response.headersSent) response.destroy();
      else answerUnavailable(request, response, target.host, error);
    });
    request.pipe(upstream);
    response.once("close", () => {
      if (!upstream.writableFinished || !response.writableFinished) upstream.destroy();
    });
  };

  return {
    forward(request, response, target) {
      const key = `${target.host}:${target.port}`;
      if (target.secure && request.httpVersionMajor === 2 && !http1Only.has(key)) {
        void forwardH2(request as Http2ServerRequest, response as Http2ServerResponse, target);
      } else {
        forwardH1(request, response, target);
      }
    },
    close() {
      agent.destroy();
      plainAgent.destroy();
      for (const opening of sessions.values()) {
        opening.then((session) => session?.destroy()).catch(() => {});
      }
      sessions.clear();
    },
  };
}

/** The request's end-to-end headers: hop-by-hop ones and pseudo-headers removed. */
export function toForwardedHeaders(
  headers: IncomingHttpHeaders | http2.IncomingHttpHeaders,
): Record<string, string | string[]> {
  const connectionTokens = String(headers.connection ?? "")
    .split(",")
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== "");
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || lower.startsWith(":")) continue;
    if (HOP_BY_HOP.has(lower) || connectionTokens.includes(lower)) continue;
    // `te` may only say `trailers` end to end (gRPC needs it).
    if (lower === "te") {
      if (String(value).toLowerCase().includes("trailers")) out[lower] = "trailers";
      continue;
    }
    out[lower] = value as string | string[];
  }
  return out;
}

/** Sends the headers now, so a streaming response's first bytes are not held back. */
function flush(response: ProxiedResponse): void {
  const maybe = response as { flushHeaders?: () => void };
  maybe.flushHeaders?.();
}

/** The client's own protocol's way to say "unavailable", naming the host. */
export function answerUnavailable(
  request: ProxiedRequest,
  response: ProxiedResponse,
  host: string,
  error: unknown,
): void {
  const reason = (error as NodeJS.ErrnoException | undefined)?.code ?? (error as Error)?.message;
  const message = `cursor-byok proxy: ${host} could not be reached (${reason ?? "unknown error"})`;
  request.resume();
  if (response.headersSent || response.writableEnded) {
    response.destroy();
    return;
  }
  const contentType = String(request.headers["content-type"] ?? "");
  const writer = response as ServerResponse;
  if (contentType.startsWith("application/connect+")) {
    const json = Buffer.from(JSON.stringify({ error: { code: "unavailable", message } }));
    const envelope = Buffer.alloc(5 + json.length);
    envelope.writeUInt8(0x02, 0);
    envelope.writeUInt32BE(json.length, 1);
    json.copy(envelope, 5);
    writer.writeHead(200, { "content-type": contentType });
    writer.end(envelope);
  } else if (contentType.startsWith("application/grpc")) {
    writer.writeHead(200, {
      "content-type": contentType,
      "grpc-status": "14",
      "grpc-message": encodeURIComponent(message),
    });
    writer.end();
  } else {
    writer.writeHead(503, { "content-type": "application/json" });
    writer.end(JSON.stringify({ code: "unavailable", message }));
  }
}
