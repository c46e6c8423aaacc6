/**
 * `npm run bench:proxy`: what the IDE proxy hop adds, measured in one run on loopback and printed,
 * never asserted (docs/ide.md).
 *
 * (a) a stream answered in-process (the path of RunSSE for the IDE): a paced stream of chunks
 *     served by a handler, read directly over cleartext HTTP/1.1 (how cursor-agent connects) and
 *     through the proxy (CONNECT, TLS with our CA, in-process dispatch);
 * (b) a pass-through stream: the same paced stream from a TLS "real host", read directly and
 *     through the proxy (TLS terminated, forwarded over TLS upstream).
 *
 * For each: per-chunk latency from the writer's timestamp to the reader receiving it (p50/p99),
 * and time to first byte of a request on a warm connection (p50/p99); the added figure is the
 * proxied percentile minus the direct one, both measured here in the same run.
 */
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { createCertificateAuthority, createLeafIssuer, isWithinDomain } from "../src/ide/ca.ts";
import { silentLog } from "../src/transport/log.ts";
import { createProxyAgent } from "../src/transport/proxy/connect-through.ts";
import { startProxy } from "../src/transport/proxy/proxy.ts";

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 400);
const PACE_MS = 2;
const TTFB_REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);

/** Writes `CHUNKS` chunks, each carrying `performance.now()` at the moment it is written. */
function pacedStream(request: IncomingMessage, response: ServerResponse): void {
  request.resume();
  if (request.url?.startsWith("/ping")) {
    response.writeHead(200, { "content-type": "text/plain" });
    response.end("pong");
    return;
  }
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  response.flushHeaders();
  let sent = 0;
  const tick = () => {
    response.write(`${performance.now().toFixed(4)}\n`);
    sent += 1;
    if (sent < CHUNKS) setTimeout(tick, PACE_MS);
    else response.end();
  };
  setTimeout(tick, PACE_MS);
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Reads one paced stream; returns each chunk's delay (ms) from its write to its arrival. */
function readStream(
  get: (path: string, onResponse: (response: IncomingMessage) => void) => void,
): Promise<number[]> {
  return new Promise((resolve, reject) => {
    get("/stream", (response) => {
      const delays: number[] = [];
      let pending = "";
      response.setEncoding("utf8");
      response.on("data", (text: string) => {
        const now = performance.now();
        pending += text;
        let newline = pending.indexOf("\n");
        while (newline >= 0) {
          delays.push(now - Number(pending.slice(0, newline)));
          pending = pending.slice(newline + 1);
          newline = pending.indexOf("\n");
        }
      });
      response.on("end", () => resolve(delays));
      response.on("error", reject);
    });
  });
}

async function timeToFirstByte(
  get: (path: string, onResponse: (response: IncomingMessage) => void) => void,
): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < TTFB_REQUESTS; i += 1) {
    const start = performance.now();
    await new Promise<void>((resolve) => {
      get("/ping", (response) => {
        response.once("data", () => times.push(performance.now() - start));
        response.on("end", resolve);
        response.resume();
      });
    });
  }
  return times.slice(Math.min(10, times.length - 1));
}

function row(label: string, direct: readonly number[], proxied: readonly number[]): string {
  const f = (n: number) => n.toFixed(3).padStart(8);
  const d50 = percentile(direct, 50);
  const d99 = percentile(direct, 99);
  const p50 = percentile(proxied, 50);
  const p99 = percentile(proxied, 99);
  return `${label.padEnd(34)} direct p50 ${f(d50)} p99 ${f(d99)} | proxied p50 ${f(p50)} p99 ${f(p99)} | added p50 ${f(p50 - d50)} p99 ${f(p99 - d99)} ms`;
}

async function main(): Promise<void> {
  const ours = await createCertificateAuthority();
  const publicRoot = await createCertificateAuthority({
    permittedDomains: [],
    commonName: "bench root",
  });
  const upstreamLeaf = await createLeafIssuer(publicRoot, { permittedDomains: [] }).certificateFor(
    "api2.cursor.sh",
  );

  // The direct, cleartext server (cursor-agent's way) and the TLS "real host".
  const plain = http.createServer({ noDelay: true }, pacedStream);
  await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
  const plainPort = (plain.address() as AddressInfo).port;
  const upstream = https.createServer(
    { key: upstreamLeaf.keyPem, cert: upstreamLeaf.certPem, noDelay: true },
    pacedStream,
  );
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const upstreamPort = (upstream.address() as AddressInfo).port;

  const issuer = createLeafIssuer(ours);
  const proxy = await startProxy({
    host: "127.0.0.1",
    port: 0,
    isIntercepted: (host) => isWithinDomain(host, "cursor.sh"),
    certificateFor: (host) => issuer.certificateFor(host),
    serves: (path) => path.startsWith("/served"),
    serve: (request, response) => {
      request.url = (request.url ?? "").replace(/^\/served/, "");
      pacedStream(request as IncomingMessage, response as ServerResponse);
    },
    resolveUpstream: () => ({ host: "127.0.0.1", port: upstreamPort }),
    upstreamCa: [publicRoot.certPem],
    log: silentLog,
  });

  const plainAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const upstreamAgent = new https.Agent({
    keepAlive: true,
    maxSockets: 1,
    ca: [publicRoot.certPem],
  });
  const proxyAgent = createProxyAgent({ proxyUrl: proxy.url, ca: [ours.certPem] });
  (proxyAgent as { maxSockets: number }).maxSockets = 1;

  const directLocal = (path: string, on: (r: IncomingMessage) => void) =>
    http.get({ host: "127.0.0.1", port: plainPort, path, agent: plainAgent }, on);
  const proxiedLocal = (path: string, on: (r: IncomingMessage) => void) =>
    https.get({ host: "api2.cursor.sh", path: `/served${path}`, agent: proxyAgent }, on);
  const directUpstream = (path: string, on: (r: IncomingMessage) => void) =>
    https.get(
      {
        host: "127.0.0.1",
        servername: "api2.cursor.sh",
        port: upstreamPort,
        path,
        agent: upstreamAgent,
        headers: { host: "api2.cursor.sh" },
      },
      on,
    );
  const proxiedUpstream = (path: string, on: (r: IncomingMessage) => void) =>
    https.get({ host: "api2.cursor.sh", path, agent: proxyAgent }, on);

  // Warm every path once (connections, the leaf certificate), then measure alternately.
  for (const get of [directLocal, proxiedLocal, directUpstream, proxiedUpstream])
    await readStream(get);
  const results: Record<string, number[]> = {};
  const add = (key: string, values: number[]) => {
    results[key] = [...(results[key] ?? []), ...values];
  };
  for (let round = 0; round < 3; round += 1) {
    add("directLocal", await readStream(directLocal));
    add("proxiedLocal", await readStream(proxiedLocal));
    add("directUpstream", await readStream(directUpstream));
    add("proxiedUpstream", await readStream(proxiedUpstream));
  }
  const ttfb = {
    directLocal: await timeToFirstByte(directLocal),
    proxiedLocal: await timeToFirstByte(proxiedLocal),
    directUpstream: await timeToFirstByte(directUpstream),
    proxiedUpstream: await timeToFirstByte(proxiedUpstream),
  };

  const lines = [
    `bench:proxy — ${CHUNKS} chunks × 3 rounds paced ${PACE_MS} ms; ${TTFB_REQUESTS} warm requests (loopback, one process)`,
    row("(a) served in-process: per chunk", results.directLocal ?? [], results.proxiedLocal ?? []),
    row("(a) served in-process: TTFB", ttfb.directLocal, ttfb.proxiedLocal),
    row("(b) pass-through: per chunk", results.directUpstream ?? [], results.proxiedUpstream ?? []),
    row("(b) pass-through: TTFB", ttfb.directUpstream, ttfb.proxiedUpstream),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);

  plainAgent.destroy();
  upstreamAgent.destroy();
  proxyAgent.destroy();
  await proxy.close();
  plain.close();
  upstream.close();
  plain.closeAllConnections();
  upstream.closeAllConnections();
}

await main();
