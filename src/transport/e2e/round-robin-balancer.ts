/**
 * A plain round-robin HTTP balancer on 127.0.0.1 for tests and benchmarks of several instances
 * (docs/team.md): every request goes to the next backend in turn, with no stickiness, so the
 * RunSSE and the BidiAppends of one stream land on different instances. A backend that refuses
 * the connection (a killed instance) is skipped, as a balancer's health check would.
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import {
  type ClientHttp2Session,
  createServer as createHttp2Server,
  connect as http2Connect,
  constants as http2Constants,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
  type ServerHttp2Session,
  type ServerHttp2Stream,
} from "node:http2";
import type { AddressInfo } from "node:net";

export interface BalancerHit {
  readonly path: string;
  readonly requestID: string | undefined;
  /** Index into the backends. */
  readonly backend: number;
}

export interface Balancer {
  readonly url: string;
  readonly hits: readonly BalancerHit[];
  close(): Promise<void>;
}

export async function startRoundRobinBalancer(backends: readonly string[]): Promise<Balancer> {
  const hits: BalancerHit[] = [];
  let next = 0;

  const attempt = (request: IncomingMessage, response: ServerResponse, tries: number): void => {
    const backend = next % backends.length;
    next += 1;
    const target = new URL(request.url ?? "/", backends[backend]);
    const outgoing = httpRequest(target, {
      method: request.method,
      headers: { ...request.headers, host: target.host },
    });
    let connected = false;
    outgoing.on("socket", (socket) => {
      const onConnect = () => {
        connected = true;
        request.pipe(outgoing);
      };
      if (socket.connecting) socket.once("connect", onConnect);
      else onConnect();
    });
    outgoing.on("response", (answer) => {
      const header = request.headers["x-request-id"];
      hits.push({
        path: (request.url ?? "/").split("?")[0] ?? "/",
        requestID: Array.isArray(header) ? header[0] : header,
        backend,
      });
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
      // The upstream died mid-answer: end the client's connection the same way, so it sees a
      // lost stream (and reconnects) instead of waiting on a relay that will never finish.
      answer.on("error", () => response.destroy());
      answer.on("close", () => {
        if (!answer.complete) response.destroy();
      });
    });
    outgoing.on("error", () => {
      if (!connected && tries < backends.length) {
        attempt(request, response, tries + 1);
        return;
      }
      // The backend died while serving: drop the client's connection as the backend's was.
      response.destroy();
    });
    response.on("close", () => outgoing.destroy());
  };

  const server = createServer((request, response) => attempt(request, response, 1));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The same over cleartext HTTP/2 (prior knowledge), as a balancer that speaks h2c to its
 * backends: each HTTP/2 stream (one call) goes to the next backend in turn, over one session per
 * backend, so the RunSSE and the BidiAppends of one agent stream land on different instances.
 */
export async function startRoundRobinH2Balancer(backends: readonly string[]): Promise<Balancer> {
  const hits: BalancerHit[] = [];
  let next = 0;
  const sessions = new Map<number, ClientHttp2Session>();
  const sessionFor = (backend: number): ClientHttp2Session => {
    let session = sessions.get(backend);
    if (session === undefined || session.closed || session.destroyed) {
      session = http2Connect(backends[backend] as string);
      session.on("error", () => sessions.delete(backend));
      sessions.set(backend, session);
    }
    return session;
  };
  const server = createHttp2Server();
  const incoming = new Set<ServerHttp2Session>();
  server.on("session", (session: ServerHttp2Session) => {
    incoming.add(session);
    session.once("close", () => incoming.delete(session));
  });
  server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    const backend = next % backends.length;
    next += 1;
    const path = String(headers[":path"] ?? "/");
    const requestID = headers["x-request-id"];
    hits.push({
      path: path.split("?")[0] ?? "/",
      requestID: Array.isArray(requestID) ? requestID[0] : requestID,
      backend,
    });
    const forwarded: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (name !== ":authority" && name !== ":scheme" && value !== undefined) {
        forwarded[name] = value;
      }
    }
    const upstream = sessionFor(backend).request(forwarded);
    upstream.on("response", (answer) => {
      const copied: OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer)) {
        if (value !== undefined) copied[name] = value;
      }
      stream.respond(copied);
      upstream.pipe(stream);
    });
    upstream.on("error", () => stream.close(http2Constants.NGHTTP2_INTERNAL_ERROR));
    stream.on("error", () => upstream.close(http2Constants.NGHTTP2_CANCEL));
    stream.on("close", () => {
      if (!upstream.closed) upstream.close(http2Constants.NGHTTP2_CANCEL);
    });
    stream.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of sessions.values()) session.destroy();
        // Clients' sessions too: close waits for every one of them to end.
        for (const session of incoming) session.destroy();
        server.close(() => resolve());
      }),
  };
}
