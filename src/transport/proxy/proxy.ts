/**
 * The IDE proxy (docs/ide.md): an HTTP proxy on loopback that the Cursor IDE is configured to use.
 *
 * - `CONNECT host:443` to an intercepted host (`*.cursor.sh`): the proxy terminates TLS with a
 *   certificate for that host from the local CA (chosen by SNI, or the CONNECT host when the
 *   client sends none), offering ALPN `h2` and `http/1.1`. Requests for procedures this process
 *   serves go to its handler in-process; everything else is forwarded to the real host.
 * - `CONNECT` to any other host: a byte-for-byte tunnel, never decrypted.
 * - Plain-HTTP proxy requests (absolute-form URLs) are forwarded.
 *
 * Bounded: connections, header size and time, TLS handshake time, connect time upstream; a
 * CONNECT to a port outside the allowed list is refused; the proxy listens on loopback only.
 *
 * Why one file of about 410 lines: one listener whose three paths (intercepted CONNECT, tunnelled
 * CONNECT, plain forwarding) share its limits and connection bookkeeping.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import http2, { type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import tls, { type SecureContext, type TLSSocket } from "node:tls";
import type { RequestHandler } from "../http/listen.ts";
import { isLoopbackHost } from "../http/loopback.ts";
import type { Log } from "../log.ts";
import { createForwarder, type UpstreamResolver } from "./forward.ts";

export interface IssuedCertificate {
  readonly certPem: string;
  readonly keyPem: string;
}

/** One request the proxy saw on an intercepted host. */
export interface ProxyTraffic {
  readonly host: string;
  readonly path: string;
  /** Answered in-process (true) or forwarded (false). */
  readonly served: boolean;
  /** Sent by our own self-test (`doctor`, `ide status`), not by the IDE. */
  readonly probe: boolean;
}

/** The header our self-test marks its requests with. */
export const PROBE_HEADER = "x-cursor-byok-probe";

export interface ProxyOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Hosts whose TLS is terminated here; every other host is tunnelled untouched. */
  readonly isIntercepted: (host: string) => boolean;
  readonly certificateFor: (host: string) => Promise<IssuedCertificate>;
  /** Whether this process answers `path` (then `serve` gets the request). */
  readonly serves: (path: string) => boolean;
  readonly serve: RequestHandler;
  /** The real address of a host (tests map hosts to local stand-ins). */
  readonly resolveUpstream?: UpstreamResolver;
  /** Trust roots for upstream TLS; default: Node's bundled roots and the system's. */
  readonly upstreamCa?: readonly string[];
  /** Ports a CONNECT may name; default `[443]`. */
  readonly allowedConnectPorts?: readonly number[];
  /** Ports a plain-HTTP (absolute-form) request may name; default `[80]`. */
  readonly allowedPlainPorts?: readonly number[];
  readonly maxConnections?: number;
  readonly headersTimeoutMs?: number;
  readonly tlsHandshakeTimeoutMs?: number;
  readonly upstreamConnectTimeoutMs?: number;
  /** The largest request head accepted, in bytes. */
  readonly maxHeaderBytes?: number;
  readonly idleTimeoutMs?: number;
  readonly log: Log;
  readonly onTraffic?: (traffic: ProxyTraffic) => void;
}

export interface IdeProxy {
  /** `http://host:port`: the value of the IDE's `http.proxy`. */
  readonly url: string;
  readonly address: AddressInfo;
  close(): Promise<void>;
}

export const DEFAULT_PROXY_LIMITS = {
  maxConnections: 1024,
  headersTimeoutMs: 15_000,
  tlsHandshakeTimeoutMs: 15_000,
  upstreamConnectTimeoutMs: 15_000,
  maxHeaderBytes: 32 * 1024,
  /** A decrypted connection with no traffic at all for this long is closed. */
  idleTimeoutMs: 5 * 60_000,
} as const;

const ESTABLISHED = "HTTP/1.1 200 Connection Established\r\n\r\n";

export async function startProxy(options: ProxyOptions): Promise<IdeProxy> {
  if (!isLoopbackHost(options.host)) {
    throw new Error(
      `the IDE proxy listens on loopback only; ${options.host} is not a loopback address`,
    );
  }
  const log = options.log;
  const limits = { ...DEFAULT_PROXY_LIMITS, ...definedOnly(options) };
  const allowedPorts = new Set(options.allowedConnectPorts ?? [443]);
  const plainPorts = new Set(options.allowedPlainPorts ?? [80]);
  const resolve: UpstreamResolver = options.resolveUpstream ?? ((host, port) => ({ host, port }));
  const forwarder = createForwarder({
    resolve,
    ca: options.upstreamCa ?? defaultTrustRoots(),
    connectTimeoutMs: limits.upstreamConnectTimeoutMs,
  });
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };

  // Decrypted connections: one HTTP/2 server (with HTTP/1.1 fallback) that is handed each TLS
  // socket after its handshake.
  const inner = http2.createSecureServer({
    allowHTTP1: true,
    settings: { maxHeaderListSize: limits.maxHeaderBytes },
    maxSessionMemory: 32,
  });
  inner.on("request", (request: Http2ServerRequest | IncomingMessage, response) => {
    // The host is the one the client asked the proxy to CONNECT to, which the certificate names;
    // a request naming another host is refused, so nothing decrypted here goes elsewhere.
    const host = connectHostOf(request);
    const named = toRequestHost(request);
    if (host === undefined || (named !== "" && named !== host)) {
      log.warn(
        { connectHost: host, requestHost: named },
        "proxy: request host differs from the CONNECT host",
      );
      request.resume();
      const writer = response as unknown as ServerResponse;
      writer.writeHead(421, { "content-type": "text/plain" });
      writer.end(
        `cursor-byok proxy: this connection is for ${host ?? "another host"}, not ${named}\n`,
      );
      return;
    }
    const path = pathOf(request.url ?? "/");
    const served = options.serves(path);
    options.onTraffic?.({ host, path, served, probe: request.headers[PROBE_HEADER] !== undefined });
    if (served) {
      options.serve(request, response as ServerResponse | Http2ServerResponse);
    } else {
      forwarder.forward(request, response as ServerResponse | Http2ServerResponse, {
        host,
        port: 443,
        secure: true,
      });
    }
  });
  inner.on("sessionError", (error) =>
    log.debug({ error: error.message }, "proxy: h2 session error"),
  );

  const contexts = new WeakMap<IssuedCertificate, SecureContext>();
  const contextFor = async (host: string): Promise<SecureContext> => {
    const issued = await options.certificateFor(host);
    let context = contexts.get(issued);
    if (context === undefined) {
      context = tls.createSecureContext({ key: issued.keyPem, cert: issued.certPem });
      contexts.set(issued, context);
    }
    return context;
  };

  const intercept = async (socket: Socket, head: Buffer, connectHost: string): Promise<void> => {
    let defaultContext: SecureContext;
    try {
      defaultContext = await contextFor(connectHost);
    } catch (error) {
      log.warn({ host: connectHost, error: (error as Error).message }, "proxy: no certificate");
      socket.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
      return;
    }
    socket.write(ESTABLISHED);
    if (head.length > 0) socket.unshift(head);
    const secure: TLSSocket & { [CONNECT_HOST]?: string } = new tls.TLSSocket(socket, {
      isServer: true,
      secureContext: defaultContext,
      ALPNProtocols: ["h2", "http/1.1"],
      SNICallback(servername, callback) {
        // The certificate is for the host the client asked to reach, and no other.
        if (servername.toLowerCase().replace(/\.$/, "") !== connectHost) {
          log.warn(
            { connectHost, servername },
            "proxy: TLS server name differs from the CONNECT host; refused",
          );
          callback(new Error(`server name ${servername} differs from ${connectHost}`));
          return;
        }
        callback(null, defaultContext);
      },
    });
    secure[CONNECT_HOST] = connectHost;
    const handshake = setTimeout(() => {
      log.debug({ host: connectHost }, "proxy: TLS handshake timed out");
      secure.destroy();
    }, limits.tlsHandshakeTimeoutMs);
    secure.once("secure", () => {
      clearTimeout(handshake);
      // Agent streams send heartbeats, so only a connection nobody uses goes quiet this long.
      secure.setTimeout(limits.idleTimeoutMs, () => secure.destroy());
      // As tls.Server does before it hands a socket on: HTTP/2 waits for a client-side
      // `secureConnect` (never emitted on a server socket) while this is still true.
      (secure as unknown as { secureConnecting: boolean }).secureConnecting = false;
      inner.emit("secureConnection", secure);
    });
    secure.on("error", (error) => {
      clearTimeout(handshake);
      log.debug({ host: connectHost, error: error.message }, "proxy: TLS connection failed");
      secure.destroy();
    });
    secure.once("close", () => clearTimeout(handshake));
  };

  const tunnel = (socket: Socket, head: Buffer, host: string, port: number): void => {
    const to = resolve(host, port);
    const upstream = net.connect({ host: to.host, port: to.port });
    track(upstream);
    const timer = setTimeout(() => {
      upstream.destroy(new Error("connect timed out"));
    }, limits.upstreamConnectTimeoutMs);
    let connected = false;
    upstream.once("connect", () => {
      connected = true;
      clearTimeout(timer);
      upstream.setNoDelay(true);
      socket.write(ESTABLISHED);
      if (head.length > 0) upstream.write(head);
      socket.pipe(upstream);
      upstream.pipe(socket);
    });
    upstream.once("error", (error) => {
      clearTimeout(timer);
      if (!connected) {
        log.debug({ host, port, error: error.message }, "proxy: tunnel upstream failed");
        socket.end(
          `HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${host}:${port} could not be reached\n`,
        );
      } else {
        socket.destroy();
      }
    });
    socket.once("close", () => upstream.destroy());
    upstream.once("close", () => socket.destroy());
  };

  const server = http.createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: 0,
    // Node checks the head time-out only this often (30 s by default).
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    noDelay: true,
  });
  server.maxConnections = limits.maxConnections;
  server.on("connection", track);
  server.on("connect", (request: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on("error", () => socket.destroy());
    const target = parseAuthority(request.url ?? "");
    if (target === undefined) {
      log.warn({ target: truncate(request.url ?? "") }, "proxy: CONNECT to a malformed address");
      socket.end(refusal(400, "Bad Request", "CONNECT needs host:port"));
      return;
    }
    if (!allowedPorts.has(target.port)) {
      log.warn({ host: target.host, port: target.port }, "proxy: CONNECT to a port not allowed");
      socket.end(
        refusal(403, "Forbidden", `CONNECT to port ${target.port} is not allowed by cursor-byok`),
      );
      return;
    }
    if (options.isIntercepted(target.host)) {
      void intercept(socket, head, target.host);
    } else {
      tunnel(socket, head, target.host, target.port);
    }
  });
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    const url = toAbsoluteUrl(request.url ?? "");
    if (url === undefined) {
      request.resume();
      response.writeHead(400, { "content-type": "text/plain" });
      response.end(
        "This is the cursor-byok IDE proxy: send proxy requests (absolute URLs or CONNECT).\n",
      );
      return;
    }
    const port = Number(url.port || 80);
    if (url.protocol !== "http:" || !plainPorts.has(port)) {
      request.resume();
      log.warn({ host: url.hostname, port }, "proxy: plain request to a port not allowed");
      response.writeHead(403, { "content-type": "text/plain" });
      response.end(`cursor-byok proxy: plain HTTP to port ${port} is not allowed\n`);
      return;
    }
    forwarder.forward(request, response, {
      host: url.hostname,
      port,
      secure: false,
      path: `${url.pathname}${url.search}`,
    });
  });
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    log.debug({ error: error.code ?? error.message }, "proxy: bad request from a client");
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const status =
      error.code === "HPE_HEADER_OVERFLOW"
        ? refusal(431, "Request Header Fields Too Large", "the request head is too large")
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? refusal(408, "Request Timeout", "the request head took too long")
          : refusal(400, "Bad Request", "not an HTTP request");
    socket.end(status);
  });

  await new Promise<void>((resolveListen, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolveListen();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    address,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        forwarder.close();
        for (const socket of sockets) socket.destroy();
        inner.close();
      }),
  };
}

/** `host:port` of a CONNECT request line (IPv6 in brackets); `undefined` if malformed. */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]{1,253}):(\d{1,5})$/.exec(authority);
  if (match === null) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65_535) return undefined;
  const host = (match[1] ?? "").toLowerCase().replace(/\.$/, "");
  if (host === "") return undefined;
  return { host: host.startsWith("[") ? host.slice(1, -1) : host, port };
}

function toAbsoluteUrl(raw: string): URL | undefined {
  if (!/^https?:\/\//i.test(raw)) return undefined;
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}

/** Marks a decrypted socket with the host its CONNECT named. */
const CONNECT_HOST = Symbol("cursor-byok connect host");

function connectHostOf(request: Http2ServerRequest | IncomingMessage): string | undefined {
  // For HTTP/2, `request.socket` is a view of the session's socket that passes reads through.
  const socket = request.socket as unknown as { [CONNECT_HOST]?: string } | null;
  return socket?.[CONNECT_HOST];
}

function toRequestHost(request: Http2ServerRequest | IncomingMessage): string {
  const authority = request.headers[":authority"] ?? request.headers.host ?? "";
  const value = Array.isArray(authority) ? (authority[0] ?? "") : authority;
  return value.replace(/:\d+$/, "").replace(/\.$/, "").toLowerCase();
}

function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}

function refusal(status: number, reason: string, message: string): string {
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(message) + 1}\r\nconnection: close\r\n\r\n${message}\n`;
}

function truncate(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}

function definedOnly(options: ProxyOptions): Partial<typeof DEFAULT_PROXY_LIMITS> {
  const out: Record<string, number> = {};
  for (const key of Object.keys(DEFAULT_PROXY_LIMITS) as (keyof typeof DEFAULT_PROXY_LIMITS)[]) {
    const value = options[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

let roots: readonly string[] | undefined;
/** Node's bundled Mozilla roots plus the operating system's (where Node can read them). */
function defaultTrustRoots(): readonly string[] {
  if (roots === undefined) {
    const all = new Set<string>(tls.getCACertificates("bundled"));
    try {
      for (const cert of tls.getCACertificates("system")) all.add(cert);
    } catch {
      // No system store readable: the bundled roots alone.
    }
    roots = [...all];
  }
  return roots;
}
