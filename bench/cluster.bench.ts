/**
 * `npm run bench:cluster`: agent-turn throughput of 1, 2 and 3 server processes on one
 * PostgreSQL database behind a plain round-robin balancer (docs/team.md "Several instances"),
 * measured in one run. Each turn is a real agent turn over RunSSE + BidiAppend from the test
 * client: a model call that asks for read_file, the client's read, a second model call that
 * answers — so a turn is two commits of the conversation, two model calls and three BidiAppends,
 * most of them forwarded to the stream's owner. The model is a fake provider on 127.0.0.1 that
 * answers at once, so the figures are the server's own cost. PostgreSQL: a local cluster with
 * fsync and synchronous_commit on (or CURSOR_BYOK_TEST_DATABASE_URL). Printed, not asserted.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { toChatCompletionSse } from "../src/llm/testing/chat-completions-sse.ts";
import { type RecordedRequest, startFakeProvider } from "../src/llm/testing/fake-provider.ts";
import { openPostgresStore } from "../src/store/index.ts";
import { getTestPostgres } from "../src/store/testing/postgres-server.ts";
import { startRoundRobinBalancer } from "../src/transport/e2e/round-robin-balancer.ts";
import {
  API_KEY,
  type ChildServer,
  MODEL,
  startServerProcess,
} from "../src/transport/e2e/test-harness.ts";
import { createCursorClient } from "../src/transport/testing/index.ts";

const TURNS = Number(process.env.BENCH_TURNS ?? 120);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 12);
const WARM_UP = 12;

const postgres = await getTestPostgres({ durable: true });
if (postgres.type === "unavailable") {
  console.log(`bench:cluster skipped: ${postgres.reason}`);
  process.exit(0);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function answer(request: RecordedRequest) {
  const body = JSON.parse(request.body) as { messages: { role: string }[] };
  const done = body.messages.some((message) => message.role === "tool");
  const reply = done
    ? { text: "The file says hello." }
    : { toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "a.txt" } }] };
  return { type: "sse", body: toChatCompletionSse(reply) } as const;
}

interface Figures {
  readonly instances: number;
  readonly turnsPerSecond: number;
  readonly p50: number;
  readonly p95: number;
  readonly spread: number;
}

async function measure(instances: number): Promise<Figures> {
  if (postgres.type === "unavailable") throw new Error("unreachable");
  const schema = await postgres.server.createSchema();
  await (await openPostgresStore({ url: schema.url, poolSize: 1 })).close();
  const provider = await startFakeProvider();
  provider.answer(answer);
  const workspace = mkdtempSync(join(tmpdir(), "cursor-byok-bench-cluster-"));
  writeFileSync(join(workspace, "a.txt"), "hello\n");
  const servers: ChildServer[] = [];
  try {
    for (let i = 0; i < instances; i++) {
      servers.push(
        await startServerProcess({
          providerUrl: provider.url,
          apiKey: API_KEY,
          model: MODEL,
          dbPath: "",
          port: await freePort(),
          databaseUrl: schema.url,
          instanceID: `bench-${instances}-${i}`,
        }),
      );
    }
    const balancer = await startRoundRobinBalancer(servers.map((server) => server.url));
    const client = createCursorClient({
      baseUrl: balancer.url,
      httpVersion: "1.1",
      workspace,
      timeoutMs: 60_000,
    });
    const latencies: number[] = [];
    let next = 0;
    const run = async (count: number, record: boolean): Promise<void> => {
      const lane = async (): Promise<void> => {
        while (next < count) {
          const index = next;
          next += 1;
          const started = performance.now();
          const result = await client.startTurn({
            conversationId: `bench-${instances}-${record ? "m" : "w"}-${index}`,
            text: "read a.txt",
            modelId: MODEL,
          }).done;
          if (result.error !== undefined) throw new Error(`turn ${index}: ${result.error.message}`);
          if (record) latencies.push(performance.now() - started);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, lane));
    };
    await run(WARM_UP, false);
    next = 0;
    const started = performance.now();
    await run(TURNS, true);
    const seconds = (performance.now() - started) / 1000;
    await client.close();
    const hits = balancer.hits.filter((hit) => /RunSSE|BidiAppend/.test(hit.path));
    const byStream = new Map<string, Set<number>>();
    for (const hit of hits) {
      if (hit.requestID === undefined) continue;
      byStream.set(hit.requestID, (byStream.get(hit.requestID) ?? new Set()).add(hit.backend));
    }
    await balancer.close();
    latencies.sort((a, b) => a - b);
    const at = (p: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
    return {
      instances,
      turnsPerSecond: TURNS / seconds,
      p50: at(0.5),
      p95: at(0.95),
      spread:
        [...byStream.values()].filter((set) => set.size > 1).length / Math.max(1, byStream.size),
    };
  } finally {
    for (const server of servers) await server.close();
    await provider.close();
    await schema.drop();
    rmSync(workspace, { recursive: true, force: true });
  }
}

const results: Figures[] = [];
for (const instances of [1, 2, 3]) results.push(await measure(instances));

console.log(
  `Agent turns through a round-robin balancer, ${TURNS} turns (after ${WARM_UP} warm-up), ` +
    `${CONCURRENCY} at a time; each turn = 2 model calls + 1 client read_file; ` +
    `PostgreSQL ${process.env.CURSOR_BYOK_TEST_DATABASE_URL === undefined ? "local cluster, fsync on" : "CURSOR_BYOK_TEST_DATABASE_URL"}; ` +
    `${cpus().length} CPU cores shared by the balancer, the client, the instances and PostgreSQL`,
);
console.log("instances | turns/s | p50 turn  | p95 turn  | streams on >1 instance");
for (const r of results) {
  console.log(
    `${String(r.instances).padStart(9)} | ${r.turnsPerSecond.toFixed(1).padStart(7)} | ` +
      `${`${r.p50.toFixed(0)} ms`.padStart(9)} | ${`${r.p95.toFixed(0)} ms`.padStart(9)} | ` +
      `${(r.spread * 100).toFixed(0)}%`,
  );
}
process.exit(0);
