/**
 * One port for both HTTP/1.1 (RunSSE + BidiAppend, the unary RPCs) and cleartext HTTP/2 with
 * prior knowledge (the bidi `Run`): each new connection is routed by its first bytes, the HTTP/2
 * connection preface or anything else.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import http2, { type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import net, { type AddressInfo, type Socket } from "node:net";
import { Duplex } from "node:stream";

export type RequestHandler = (
  request: IncomingMessage | Http2ServerRequest,
  response: ServerResponse | Http2ServerResponse,
) => void;

export interface Listener {
  readonly address: AddressInfo;
  /** Stops accepting connections, closes idle ones, and resolves when all are closed. */
  close(): Promise<void>;
  /** Destroys every open connection now. */
  destroy(): void;
}

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** Bounds on what a client that sends little or nothing can hold (see DEFAULT_LISTEN_LIMITS). */
export interface ListenLimits {
  /**
   * How long a new connection may take to send the bytes that route it (the HTTP/2 preface or
   * an HTTP/1.1 request line) before it is closed.
   */
  readonly firstBytesTimeoutMs: number;
  /** HTTP/1.1: how long a request's headers may take (Node's `headersTimeout`). */
  readonly headersTimeoutMs: number;
  /** HTTP/1.1: how long a whole request body may take (Node's `requestTimeout`). */
  readonly requestTimeoutMs: number;
  /** HTTP/2: how long the client may take to send its SETTINGS after the preface. */
  readonly settingsTimeoutMs: number;
  /** Open connections at most; more are closed as they arrive. */
  readonly maxConnections: number;
}

export const DEFAULT_LISTEN_LIMITS: ListenLimits = {
  firstBytesTimeoutMs: 10_000,
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 60_000,
  settingsTimeoutMs: 10_000,
  maxConnections: 1_000,
};

/**
 * Connections the kernel queues before they are accepted. Node's default (511) overflows when
 * many clients connect at once — every client reconnecting after a restart, or a load test —
 * and the kernel then drops connections (seen as ECONNRESET, issue #19). Linux caps it at
 * `net.core.somaxconn` (4096 on current kernels).
 */
const LISTEN_BACKLOG = 4096;

export async function listen(
  handler: RequestHandler,
  host: string,
  port: number,
  limits: ListenLimits = DEFAULT_LISTEN_LIMITS,
): Promise<Listener> {
  const h1 = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks both every `connectionsCheckingInterval`; keep that well under them.
      connectionsCheckingInterval: Math.max(
        10,
        Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4)),
      ),
    },
    handler as http.RequestListener,
  );
  // h1 never listens itself (connections are handed to it), and Node starts the checks behind
  // `headersTimeout` and `requestTimeout` only when a server starts listening: start them.
  h1.emit("listening");
  const h2 = http2.createServer(
    handler as (req: Http2ServerRequest, res: Http2ServerResponse) => void,
  );
  const sockets = new Set<Socket>();
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    // A client that sent the preface but never its SETTINGS holds a session for nothing.
    const timer = setTimeout(() => session.destroy(), limits.settingsTimeoutMs);
    timer.unref();
    session.once("remoteSettings", () => clearTimeout(timer));
    session.once("close", () => clearTimeout(timer));
  });

  const route = (socket: Socket): void => {
    // Streams are many small writes (one envelope per event): without this, Nagle's algorithm
    // holds each behind the client's delayed ACK, up to ~40 ms.
    socket.setNoDelay(true);
    sockets.add(socket);
    // Until the first bytes route the connection, no HTTP time-out applies: this one does. Let
    // go once cleared: this scope lives as long as the connection (issue #19).
    let silent: ReturnType<typeof setTimeout> | undefined = setTimeout(
      () => socket.destroy(),
      limits.firstBytesTimeoutMs,
    );
    silent.unref();
    const quiet = () => {
      clearTimeout(silent);
      silent = undefined;
    };
    socket.once("close", () => {
      sockets.delete(socket);
      quiet();
    });
    let head = EMPTY;
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, PREFACE.length);
      const isH2 = head.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isH2 && head.length < PREFACE.length) return;
      quiet();
      socket.off("data", onData);
      // The close listener above shares this scope and lives as long as the connection: it must
      // not keep the first bytes (a slice that can pin a whole 64 KiB read buffer, issue #19).
      const routed = head;
      head = EMPTY;
      if (isH2) {
        // http2 reads a net.Socket's native handle directly and would miss the bytes already
        // read here, so it gets a stream that replays them first.
        h2.emit("connection", toReplayingStream(socket, routed));
      } else {
        socket.pause();
        socket.unshift(routed);
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
    socket.on("error", destroyOnError);
  };

  const server = net.createServer(route);
  // Beyond this, Node closes new connections as they are accepted.
  server.maxConnections = limits.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      server.off("error", reject);
      resolve();
    });
  });

  return {
    address: server.address() as AddressInfo,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        h1.closeIdleConnections();
        // Stops the header and request time-out checks (h1 itself never listened).
        h1.close(() => {});
        for (const session of sessions) session.close();
      }),
    destroy() {
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
    },
  };
}

const EMPTY = Buffer.alloc(0);

/** A connection's error listener, one for all (`this` is the socket). */
function destroyOnError(this: Socket): void {
  this.destroy();
}

/** A duplex over `socket` whose readable side yields `head` first. */
function toReplayingStream(socket: Socket, head: Buffer): Duplex {
  const stream = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk, encoding, callback) {
      socket.write(chunk, encoding, callback);
    },
    final(callback) {
      socket.end(callback);
    },
    destroy(error, callback) {
      socket.destroy(error ?? undefined);
      callback(error);
    },
  });
  stream.push(head);
  socket.on("data", (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.on("end", () => stream.push(null));
  socket.on("close", () => stream.destroy());
  return stream;
}
