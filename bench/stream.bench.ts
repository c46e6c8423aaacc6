/**
 * `npm run bench:stream`: what the server adds to a model stream, measured in one run against a
 * loopback fake provider (OpenAI-compatible SSE) and printed, never asserted.
 *
 * (a) latency from the provider writing a chunk to the client receiving its text_delta on
 *     RunSSE, for a paced stream (p50/p99), against the same chunk read directly through the
 *     LLM layer (the baseline, same process);
 * (b) time to first text delta through the server minus the provider's own time to first byte;
 * (c) events per second through the server vs the same stream consumed directly with the LLM
 *     layer (pi-ai) in this process (ratio);
 * (d) 200 concurrent conversations on a server in its own process: heartbeat gaps while the
 *     model is silent, and the server's resident memory per open stream.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createLLM, createModelConfigs } from "../src/llm/index.ts";
import { createRunner } from "../src/runner/runner.ts";
import { createMemoryStore } from "../src/store/index.ts";
import { silentLog } from "../src/transport/log.ts";
import { DEFAULT_SERVER_OPTIONS, startServer } from "../src/transport/server.ts";
import { indexOf, MODEL, ms, percentile, runTurn, startBenchProvider } from "./turn-kit.ts";

async function main(): Promise<void> {
  const provider = await startBenchProvider();
  const models = createModelConfigs([
    {
      name: MODEL,
      api: "openai-compatible",
      model: "bench-model",
      baseUrl: provider.url,
      apiKey: "k",
    },
  ]);
  const llm = createLLM({ models });
  const store = createMemoryStore();
  const server = await startServer(
    { store, llm, runner: createRunner({ store, llm }), log: silentLog },
    { ...DEFAULT_SERVER_OPTIONS, port: 0, runSseContentType: "connect" },
  );
  const direct = async () => {
    const received: number[] = [];
    const stream = createLLM({ models }).stream({
      callID: randomUUID(),
      model: MODEL,
      conversationID: "bench",
      request: {
        systemPrompt: "s",
        tools: [],
        messages: [{ role: "user", content: "go", timestamp: 1 }],
      },
    });
    let events = 0;
    for await (const event of stream) {
      events += 1;
      if (event.type === "text_delta") received[indexOf(event.delta)] = performance.now();
    }
    return { received, events };
  };

  // (a) chunk → client latency, paced stream
  provider.script = { chunks: 400, paceMs: 2 };
  await runTurn(server.url, () => {}); // warm up
  const throughServer: number[] = [];
  for (let round = 0; round < 3; round += 1) {
    const received: number[] = [];
    await runTurn(server.url, (text, at) => {
      received[indexOf(text)] = at;
    });
    provider.written.forEach((at, i) => {
      const got = received[i];
      if (got !== undefined) throughServer.push(got - at);
    });
  }
  const baseline: number[] = [];
  for (let round = 0; round < 3; round += 1) {
    const { received } = await direct();
    provider.written.forEach((at, i) => {
      const got = received[i];
      if (got !== undefined) baseline.push(got - at);
    });
  }

  // (b) time to first text delta through the server minus the provider's own
  provider.script = { chunks: 5, paceMs: 0 };
  const added: number[] = [];
  for (let round = 0; round < 20; round += 1) {
    let first = Number.NaN;
    const { sentAt } = await runTurn(server.url, (_text, at) => {
      if (Number.isNaN(first)) first = at;
    });
    const providerTtfb = (provider.written[0] ?? provider.requestAt) - provider.requestAt;
    added.push(first - sentAt - providerTtfb);
  }

  const addedDirect: number[] = [];
  for (let round = 0; round < 20; round += 1) {
    const calledAt = performance.now();
    const { received } = await direct();
    const providerTtfb = (provider.written[0] ?? provider.requestAt) - provider.requestAt;
    addedDirect.push((received[0] ?? Number.NaN) - calledAt - providerTtfb);
  }

  // (c) events per second: through the server vs the LLM layer directly
  const N = 20_000;
  provider.script = { chunks: N, paceMs: 0 };
  let start = 0;
  let end = 0;
  let deltas = 0;
  await runTurn(server.url, (_text, at) => {
    if (deltas === 0) start = at;
    end = at;
    deltas += 1;
  });
  const serverRate = (deltas - 1) / ((end - start) / 1000);
  const t0 = performance.now();
  const { events } = await direct();
  const directRate = events / ((performance.now() - t0) / 1000);

  await server.close();
  await store.close();

  // (d) 200 concurrent conversations against a server process
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 200);
  const heartbeatMs = 250;
  const observeMs = 3_000;
  provider.script = { chunks: 1, paceMs: 0, stall: true };
  const dir = mkdtempSync(join(tmpdir(), "cursor-byok-bench-"));
  const child = spawn(
    process.execPath,
    [
      join(import.meta.dirname, "..", "src", "transport", "e2e", "test-server-process.ts"),
      JSON.stringify({
        providerUrl: provider.url,
        apiKey: "k",
        model: MODEL,
        dbPath: join(dir, "db"),
        port: 0,
        heartbeatMs,
        runSseContentType: "connect",
      }),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const url = await new Promise<string>((resolve) => {
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (text: string) => {
      out += text;
      const match = /LISTENING (\S+)\n/.exec(out);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
  });
  const rss = () =>
    Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) *
    1024;
  await runTurn(url, () => {}, undefined, AbortSignal.timeout(1_000)).catch(() => {});
  const rssBefore = rss();
  const controller = new AbortController();
  const gaps: number[] = [];
  const opened: Promise<unknown>[] = [];
  let streamsOpen = 0;
  const failures: string[] = [];
  for (let i = 0; i < concurrency; i += 1) {
    let last = Number.NaN;
    let counted = false;
    opened.push(
      runTurn(
        url,
        () => {},
        (message, at) => {
          if (!counted) {
            counted = true;
            streamsOpen += 1;
          }
          const update =
            message.message.case === "interactionUpdate" ? message.message.value.message.case : "";
          if (update === "heartbeat") {
            if (!Number.isNaN(last)) gaps.push(at - last);
            last = at;
          } else {
            last = at;
          }
        },
        controller.signal,
      ).catch((error: unknown) => {
        if (!controller.signal.aborted) failures.push(String(error));
      }),
    );
  }
  await new Promise((resolve) => setTimeout(resolve, observeMs));
  const rssAfter = rss();
  controller.abort();
  await Promise.all(opened);
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("exit", resolve));
  rmSync(dir, { recursive: true, force: true });
  await provider.close();

  process.stdout.write(
    [
      "bench:stream — loopback, one process for (a)–(c), a server process for (d)",
      "",
      `(a) provider chunk → text_delta on the client, paced stream (${throughServer.length} chunks)`,
      `    through the server:      p50 ${ms(percentile(throughServer, 50))}   p90 ${ms(percentile(throughServer, 90))}   p99 ${ms(percentile(throughServer, 99))}`,
      `    LLM layer directly:      p50 ${ms(percentile(baseline, 50))}   p90 ${ms(percentile(baseline, 90))}   p99 ${ms(percentile(baseline, 99))}`,
      `    added by the server:     p50 ${ms(percentile(throughServer, 50) - percentile(baseline, 50))}`,
      `(b) time to first text delta minus the provider's own, 20 turns`,
      `    through the server:      p50 ${ms(percentile(added, 50))}   p99 ${ms(percentile(added, 99))}`,
      `    LLM layer directly:      p50 ${ms(percentile(addedDirect, 50))}   p99 ${ms(percentile(addedDirect, 99))}`,
      `    added by the server:     p50 ${ms(percentile(added, 50) - percentile(addedDirect, 50))}`,
      `(c) events per second, ${N} text deltas unpaced`,
      `    through the server: ${serverRate.toFixed(0)}/s   LLM layer directly: ${directRate.toFixed(0)}/s   ratio ${(serverRate / directRate).toFixed(2)}`,
      `(d) ${concurrency} concurrent conversations, model silent, heartbeat every ${heartbeatMs} ms, observed ${observeMs} ms`,
      `    streams seen: ${streamsOpen}   heartbeat gaps: ${gaps.length}   p50 ${ms(percentile(gaps, 50))}   p99 ${ms(percentile(gaps, 99))}   max ${ms(Math.max(...gaps))}`,
      `    failed streams: ${failures.length}${failures[0] === undefined ? "" : ` (first: ${failures[0]})`}`,
      `    server RSS: ${(rssBefore / 2 ** 20).toFixed(1)} MiB → ${(rssAfter / 2 ** 20).toFixed(1)} MiB, ${((rssAfter - rssBefore) / concurrency / 1024).toFixed(1)} KiB per open stream`,
      "",
    ].join("\n"),
  );
}

await main();
