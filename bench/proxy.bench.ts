/**
 * `npm run bench:proxy`: what the IDE proxy hop adds, measured in one run on loopback and printed,
 * never asserted (docs/ide.md).
 *
 * (a) an agent turn answered in-process, as the IDE's goes: RunSSE + BidiAppend against the real
 *     server (memory store, a loopback OpenAI-compatible provider streaming paced chunks), read
 *     directly over cleartext HTTP/1.1 (how cursor-agent connects) and through the proxy
 *     (CONNECT, TLS with our CA, in-process dispatch): per chunk, from the provider writing it to
 *     the client receiving its text delta; and time to the first text delta;
 * (b) a pass-through stream: a paced stream from a TLS "real host", read directly and through
 *     the proxy (TLS terminated, forwarded over TLS upstream): per chunk, and time to first byte
 *     of a request on a warm connection.
 *
 * The added figure is the proxied percentile minus the direct one, both measured in this run.
 * Client, proxy, server and provider share this process's event loop (a worst case for the
 * proxy, whose work competes with everyone else's).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createCertificateAuthority, createLeafIssuer, isWithinDomain } from "../src/ide/ca.ts";
import { createLLM, createModelConfigs } from "../src/llm/index.ts";
import { createRunner } from "../src/runner/runner.ts";
import { createMemoryStore } from "../src/store/index.ts";
import { silentLog } from "../src/transport/log.ts";
import { createProxyAgent } from "../src/transport/proxy/connect-through.ts";
import { startProxy } from "../src/transport/proxy/proxy.ts";
import { DEFAULT_SERVER_OPTIONS, startServer } from "../src/transport/server.ts";
import { indexesOf, MODEL, percentile, runTurn, startBenchProvider } from "./turn-kit.ts";

const CHUNKS = Number(process.env.BENCH_CHUNKS ?? 400);
const PACE_MS = 2;
const TTFB_REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);
const TURNS = Number(process.env.BENCH_TURNS ?? 30);

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

  // The TLS "real host".
  const upstream = https.createServer(
    { key: upstreamLeaf.keyPem, cert: upstreamLeaf.certPem, noDelay: true },
    pacedStream,
  );
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const upstreamPort = (upstream.address() as AddressInfo).port;

  const provider = await startBenchProvider();
  const llm = createLLM({
    models: createModelConfigs([
      {
        name: MODEL,
        api: "openai-compatible",
        model: "bench-model",
        baseUrl: provider.url,
        apiKey: "k",
      },
    ]),
  });
  const store = createMemoryStore();
  const server = await startServer(
    { store, llm, runner: createRunner({ store, llm }), log: silentLog },
    { ...DEFAULT_SERVER_OPTIONS, port: 0, runSseContentType: "connect" },
  );

  const issuer = createLeafIssuer(ours);
  const proxy = await startProxy({
    host: "127.0.0.1",
    port: 0,
    isIntercepted: (host) => isWithinDomain(host, "cursor.sh"),
    certificateFor: (host) => issuer.certificateFor(host),
    serves: server.servesProcedure,
    serve: server.serveTrusted,
    resolveUpstream: () => ({ host: "127.0.0.1", port: upstreamPort }),
    upstreamCa: [publicRoot.certPem],
    log: silentLog,
  });

  // (a) turns, direct and through the proxy.
  const turnAgent = createProxyAgent({ proxyUrl: proxy.url, ca: [ours.certPem] });
  const directTurns = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
  const proxiedTurns = createConnectTransport({
    baseUrl: "https://api2.cursor.sh",
    httpVersion: "1.1",
    nodeOptions: { agent: turnAgent },
  });
  const chunkDelays = async (transport: typeof directTurns): Promise<number[]> => {
    const received: number[] = [];
    await runTurn(transport, (text, at) => {
      for (const index of indexesOf(text)) received[index] = at;
    });
    return provider.written.flatMap((at, i) => {
      const got = received[i];
      return got === undefined ? [] : [got - at];
    });
  };
  const firstDelta = async (transport: typeof directTurns): Promise<number> => {
    let first = Number.NaN;
    const { sentAt } = await runTurn(transport, (_text, at) => {
      if (Number.isNaN(first)) first = at;
    });
    return first - sentAt - ((provider.written[0] ?? provider.requestAt) - provider.requestAt);
  };
  provider.script = { chunks: CHUNKS, paceMs: PACE_MS };
  await chunkDelays(directTurns);
  await chunkDelays(proxiedTurns);
  const turnDirect: number[] = [];
  const turnProxied: number[] = [];
  for (let round = 0; round < 3; round += 1) {
    turnDirect.push(...(await chunkDelays(directTurns)));
    turnProxied.push(...(await chunkDelays(proxiedTurns)));
  }
  provider.script = { chunks: 5, paceMs: 0 };
  const firstDirect: number[] = [];
  const firstProxied: number[] = [];
  for (let round = 0; round < TURNS; round += 1) {
    firstDirect.push(await firstDelta(directTurns));
    firstProxied.push(await firstDelta(proxiedTurns));
  }

  const upstreamAgent = new https.Agent({
    keepAlive: true,
    maxSockets: 1,
    ca: [publicRoot.certPem],
  });
  const proxyAgent = createProxyAgent({ proxyUrl: proxy.url, ca: [ours.certPem] });
  (proxyAgent as { maxSockets: number }).maxSockets = 1;

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
  for (const get of [directUpstream, proxiedUpstream]) await readStream(get);
  const results: Record<string, number[]> = {};
  const add = (key: string, values: number[]) => {
    results[key] = [...(results[key] ?? []), ...values];
  };
  for (let round = 0; round < 3; round += 1) {
    add("directUpstream", await readStream(directUpstream));
    add("proxiedUpstream", await readStream(proxiedUpstream));
  }
  const ttfb = {
    directUpstream: await timeToFirstByte(directUpstream),
    proxiedUpstream: await timeToFirstByte(proxiedUpstream),
  };

  const lines = [
    `bench:proxy — ${CHUNKS} chunks × 3 rounds paced ${PACE_MS} ms; ${TURNS} short turns; ${TTFB_REQUESTS} warm requests (loopback, one process)`,
    row("(a) agent turn: per text delta", turnDirect, turnProxied),
    row("(a) agent turn: first text delta", firstDirect, firstProxied),
    row("(b) pass-through: per chunk", results.directUpstream ?? [], results.proxiedUpstream ?? []),
    row("(b) pass-through: TTFB", ttfb.directUpstream, ttfb.proxiedUpstream),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);

  turnAgent.destroy();
  upstreamAgent.destroy();
  proxyAgent.destroy();
  await proxy.close();
  await server.close();
  await store.close();
  await provider.close();
  upstream.close();
  upstream.closeAllConnections();
}

await main();
