/**
 * A world for proxy tests, all on 127.0.0.1: our server (in-process, demo model, memory store),
 * our CA, a "public" test CA that signs the fake real hosts, a fake `*.cursor.sh` upstream
 * (HTTP/2 with HTTP/1.1 fallback) that records what reaches it, a TCP echo server and a TLS
 * server of another domain for the tunnel, and the proxy between them with a host map.
 */
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import http2, { type Http2ServerRequest, type Http2ServerResponse } from "node:http2";
import net, { type AddressInfo } from "node:net";
import tls from "node:tls";
import {
  type CertificateAuthority,
  createCertificateAuthority,
  createLeafIssuer,
  isWithinDomain,
} from "../../ide/ca.ts";
import { createLLM } from "../../llm/index.ts";
import { createRunner } from "../../runner/runner.ts";
import { createMemoryStore } from "../../store/index.ts";
import { createRecordingLog, type LogLine, logRunnerErrors } from "../log.ts";
import { DEFAULT_SERVER_OPTIONS, type LocalServer, startServer } from "../server.ts";
import { type IdeProxy, type ProxyOptions, type ProxyTraffic, startProxy } from "./proxy.ts";

/** What the fake upstream received. */
export interface UpstreamRequest {
  readonly httpVersion: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  readonly servername: string | undefined;
}

export interface ProxyWorld {
  readonly ca: CertificateAuthority;
  readonly publicCa: CertificateAuthority;
  readonly server: LocalServer;
  readonly proxy: IdeProxy;
  readonly upstreamRequests: UpstreamRequest[];
  readonly traffic: ProxyTraffic[];
  readonly logs: readonly LogLine[];
  /** Lets `/slow-sse` send its second event and end. */
  releaseSlowSse(): void;
  /** Resolves when the upstream side of the next `/hold` exchange is closed. */
  nextHoldClosed(): Promise<void>;
  readonly echoPort: number;
  close(): Promise<void>;
}

export const UPSTREAM_HOSTS = ["api2.cursor.sh", "api3.cursor.sh", "repo42.cursor.sh"];
export const DOWN_HOST = "down.cursor.sh";
export const ECHO_HOST = "echo.example";
export const OTHER_TLS_HOST = "other.example";

export async function startProxyWorld(
  options: Partial<
    Pick<
      ProxyOptions,
      "maxHeaderBytes" | "tlsHandshakeTimeoutMs" | "headersTimeoutMs" | "maxConnections"
    >
  > = {},
): Promise<ProxyWorld> {
  const { log, lines: logs } = createRecordingLog();
  const ca = await createCertificateAuthority();
  const publicCa = await createCertificateAuthority({
    permittedDomains: [],
    commonName: "test public root",
  });
  const publicIssuer = createLeafIssuer(publicCa, { permittedDomains: [] });

  const upstreamRequests: UpstreamRequest[] = [];
  const holdWaiters: (() => void)[] = [];
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const upstreamCert = await publicIssuer.certificateFor("api2.cursor.sh");
  const contexts = new Map<string, tls.SecureContext>();
  for (const host of UPSTREAM_HOSTS) {
    const issued = await publicIssuer.certificateFor(host);
    contexts.set(host, tls.createSecureContext({ key: issued.keyPem, cert: issued.certPem }));
  }
  const upstream = http2.createSecureServer({
    allowHTTP1: true,
    key: upstreamCert.keyPem,
    cert: upstreamCert.certPem,
    SNICallback: (name, callback) => callback(null, contexts.get(name)),
  });
  upstream.on(
    "request",
    (
      request: Http2ServerRequest | IncomingMessage,
      response: Http2ServerResponse | ServerResponse,
    ) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const path = request.url ?? "/";
        upstreamRequests.push({
          httpVersion: request.httpVersion,
          method: request.method ?? "",
          path,
          headers: { ...request.headers },
          body: Buffer.concat(chunks).toString("utf8"),
          servername: (request.socket as tls.TLSSocket).servername || undefined,
        });
        const writer = response as ServerResponse;
        if (path === "/slow-sse") {
          writer.writeHead(200, { "content-type": "text/event-stream" });
          writer.write("data: first\n\n");
          void released.then(() => {
            writer.write("data: second\n\n");
            writer.end();
          });
        } else if (path === "/hold") {
          // One chunk, then never an end: only the client going away closes it.
          writer.writeHead(200, { "content-type": "text/event-stream" });
          writer.write("data: held\n\n");
          const closed = holdWaiters.shift();
          writer.once("close", () => closed?.());
        } else if (path === "/trailers") {
          writer.writeHead(200, { "content-type": "application/grpc", trailer: "grpc-status" });
          writer.write("body");
          writer.addTrailers({ "grpc-status": "0", "x-test-trailer": "kept" });
          writer.end();
        } else if (path === "/page") {
          writer.writeHead(200, { "content-type": "text/html; charset=utf-8" });
          writer.end("<!doctype html><title>upstream</title><p id=from>the real host</p>");
        } else {
          writer.writeHead(200, { "content-type": "application/json", "x-upstream": "yes" });
          writer.end(JSON.stringify({ upstream: true, path }));
        }
      });
    },
  );
  await listenOn(upstream);
  const upstreamPort = (upstream.address() as AddressInfo).port;

  const echo = net.createServer((socket) => {
    socket.on("error", () => socket.destroy());
    socket.pipe(socket);
  });
  await listenOn(echo);
  const echoPort = (echo.address() as AddressInfo).port;

  const otherCert = await publicIssuer.certificateFor(OTHER_TLS_HOST);
  const other = tls.createServer({ key: otherCert.keyPem, cert: otherCert.certPem }, (socket) => {
    socket.on("error", () => socket.destroy());
    socket.end("hello from other.example\n");
  });
  await listenOn(other);
  const otherPort = (other.address() as AddressInfo).port;

  const closed = net.createServer();
  await listenOn(closed);
  const downPort = (closed.address() as AddressInfo).port;
  closed.close();
  await once(closed, "close");

  const store = createMemoryStore();
  const llm = createLLM({ models: [] });
  const server = await startServer(
    { store, llm, runner: createRunner({ store, llm, onError: logRunnerErrors(log) }), log },
    { ...DEFAULT_SERVER_OPTIONS, port: 0 },
  );
  const issuer = createLeafIssuer(ca);
  const traffic: ProxyTraffic[] = [];
  const proxy = await startProxy({
    host: "127.0.0.1",
    port: 0,
    isIntercepted: (host) => isWithinDomain(host, "cursor.sh"),
    certificateFor: (host) => issuer.certificateFor(host),
    serves: server.servesProcedure,
    serve: server.serveTrusted,
    resolveUpstream: (host, port) => {
      if (UPSTREAM_HOSTS.includes(host)) return { host: "127.0.0.1", port: upstreamPort };
      if (host === ECHO_HOST) return { host: "127.0.0.1", port: echoPort };
      if (host === OTHER_TLS_HOST) return { host: "127.0.0.1", port: otherPort };
      if (host === DOWN_HOST) return { host: "127.0.0.1", port: downPort };
      if (host === "127.0.0.1") return { host, port };
      // Nothing in a test may leave the machine: unknown hosts go to a closed port.
      return { host: "127.0.0.1", port: downPort };
    },
    upstreamCa: [publicCa.certPem],
    log,
    onTraffic: (entry) => traffic.push(entry),
    ...options,
  });

  return {
    ca,
    publicCa,
    server,
    proxy,
    upstreamRequests,
    traffic,
    logs,
    echoPort,
    releaseSlowSse: () => release(),
    nextHoldClosed: () =>
      new Promise<void>((resolve) => {
        holdWaiters.push(resolve);
      }),
    async close() {
      release();
      await proxy.close();
      await server.close();
      for (const s of [upstream, echo, other] as net.Server[]) {
        s.close();
        (s as { closeAllConnections?: () => void }).closeAllConnections?.();
      }
    },
  };
}

async function listenOn(server: net.Server): Promise<void> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
}
