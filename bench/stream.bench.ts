/**
 * `npm run bench:stream`: what the server adds to a model stream, measured against a loopback
 * fake provider (OpenAI-compatible SSE) and printed beside the targets of issue #19, never
 * asserted. Sections (all by default; name some to run only those, e.g.
 * `npm run bench:stream -- throughput latency`):
 *
 * The direct baseline is the same stream consumed with the LLM layer in this process, for the
 * same request the server's model call made (Cursor's system prompt and tools).
 *
 * - throughput: text deltas per second (call to last delta) through the server ÷ directly, by
 *   response length (1k … 100k unpaced deltas, written by the provider in one piece); up to 20k
 *   also with the client in a process of its own, against the direct call made there (a client
 *   in this process reads the server's first message only once the server has worked through
 *   the network read that carried it, which counts against short replies);
 * - latency: provider writes a chunk → the client has its text, paced stream, p50/p99, through
 *   the server minus directly;
 * - ttft: time to the first text delta minus the provider's own, through the server minus
 *   directly, once the server has served a few dozen turns (the first ones, while V8 still runs
 *   unoptimised code, are printed apart); also for an IDE-sized turn start: every run request
 *   after the first few of an IDE conversation carries the client's checkpoint (up to 512 KiB),
 *   as hex in BidiAppend's `data` (turn-kit.ts `ideCheckpoint`, 300 KB), here the second turn of
 *   a conversation (its model request: the first turn's two messages more than the direct one);
 *   and, from the same turns, when the client had the reply's last text (it comes in the same
 *   network read as the reply's end, whose step commits and ends the turn), client in its own;
 *   and the first-turn and IDE-sized figures again through a server on SQLite, as `npm start`
 *   runs it (the sections' server keeps its store in memory): there a turn's start is a commit
 *   fsynced before the model call is sent (docs/design.md §7), so the figure includes the disk's
 *   fsync (its database in BENCH_DB_DIR);
 * - latency and ttft are measured twice: with the client in this process (the server's event
 *   loop also runs the client's decoding), and with the client in a process of its own
 *   (turn-client.ts), as Cursor's clients are. The latter is also set against the direct call
 *   made in the client's process: a client that talks to the provider itself crosses between
 *   processes too, and that line is what the server adds for such a client;
 * - heap: live heap (after a full GC) per open, silent stream (waiting for its model), in a
 *   server process of its own: for a first batch of 200, and for 200 more (the target's figure:
 *   the first batch also carries V8's one-off compiled code and feedback; the server keeps its
 *   bytecode, see `keepBytecode`); then the same with the model behind Anthropic's Messages API
 *   (a provider that sends a recorded reply's first text delta and goes silent);
 * - concurrency: 2,000 streaming conversations (a chunk a second each) on a server process of
 *   its own (bounded in time): chunk latency once all are open (and while they were opening),
 *   the longest silence any stream saw, and what stopped the server process meanwhile (how late
 *   its event loop ran, its garbage collections: src/transport/e2e/pauses.ts).
 *
 * heap and concurrency: the server runs with raised stream and connection caps (every
 * conversation holds a RunSSE and a BidiAppend connection); the conversations are opened and
 * read by client processes of their own (stream-clients.ts, 1,000 each; at most 64 opening at
 * once, so as fast as the server opens them), so that neither
 * the provider (this process, which stamps each chunk with the epoch time) nor the server is
 * starved by them. Everything is on 127.0.0.1 and every child is killed at the latest after the
 * watch plus 90–120 s.
 *
 * Environment: BENCH_LENGTHS (e.g. `1000,100000`), BENCH_CONCURRENCY (default 2000), BENCH_DB_DIR
 * (where the server process keeps its SQLite database; default the temporary directory).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gateLLM, type LLM, type LLMCall } from "../src/llm/index.ts";
import { readFixture } from "../src/llm/testing/fake-provider.ts";
import { startStallingProvider } from "../src/llm/testing/stalling-provider.ts";
import { createRunner } from "../src/runner/runner.ts";
import { createMemoryStore, openSqliteStore } from "../src/store/index.ts";
import { type PauseReport, watchPauses } from "../src/transport/e2e/pauses.ts";
import { silentLog } from "../src/transport/log.ts";
import { DEFAULT_SERVER_OPTIONS, startServer } from "../src/transport/server.ts";
import type { ClientResult, ClientSettings } from "./stream-clients.ts";
import type { DirectCall, TurnTimes } from "./turn-client.ts";
import {
  type BenchProvider,
  createBenchLLM,
  IDE_CHECKPOINT_BYTES,
  indexesOf,
  MODEL,
  ms,
  percentile,
  runDirect,
  runTurn,
  startBenchProvider,
} from "./turn-kit.ts";

const SECTIONS = ["throughput", "latency", "ttft", "heap", "concurrency"] as const;
type Section = (typeof SECTIONS)[number];
const asked = process.argv
  .slice(2)
  .filter((arg): arg is Section => SECTIONS.includes(arg as Section));
const run = (section: Section) => asked.length === 0 || asked.includes(section);
const LENGTHS = (process.env.BENCH_LENGTHS ?? "1000,10000,20000,100000").split(",").map(Number);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 2_000);
/** Deltas per call of the team gate's throughput figure. */
const GATE_DELTAS = 20_000;
/**
 * Where the server process's SQLite database goes. Its commits are synchronous (`synchronous =
 * full`, node:sqlite blocks the event loop for each fsync), so on a slow or busy disk the disk,
 * not the server, sets how fast conversations open: `/dev/shm` leaves the server's own costs.
 */
const DB_DIR = process.env.BENCH_DB_DIR ?? tmpdir();
/** ttft: the section's first turns (code still cold), then the turns it reports. */
const COLD_TURNS = 100;
const WARM_TURNS = 100;
/** Turns before the SQLite server's are measured (the rest of its code is warm by then). */
const DISK_WARM_UP_TURNS = 30;
/** How long the server-process sections wait for every conversation to open. */
const OPEN_LIMIT_MS = 90_000;
/** Conversations being opened at once, over all client processes. */
const MAX_OPENING = 64;
/** Conversations one client process opens and reads (stream-clients.ts). */
const CLIENTS_PER_PROCESS = 1_000;
/**
 * How the client processes speak the protocol: `lean` (lean-turn.ts, the default) keeps a load
 * generator's own collections out of the figure; `connect` reads every stream through connect-es.
 */
const CLIENT = process.env.BENCH_CLIENT === "connect" ? "connect" : "lean";

const print = (line = "") => process.stdout.write(`${line}\n`);
const median = (values: readonly number[]) => percentile(values, 50);
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;

async function main(): Promise<void> {
  const provider = await startBenchProvider();
  print("bench:stream — loopback fake provider; figure, then [target]");
  if (run("throughput") || run("latency") || run("ttft")) {
    await inProcess(provider);
  }
  if (run("heap")) {
    const heap = {
      streams: 200,
      script: { chunks: 1, paceMs: 0, stallAfter: 1 },
      heartbeatMs: 250,
      // Past the server's keep-alive timeout (Node's, 5 s): a stream waiting for its model holds
      // no idle BidiAppend connection by then, and neither batch is measured half-way through
      // those closing.
      observeMs: 6_000,
      secondBatch: true,
      keepBytecode: true,
    } as const;
    await inServerProcess(provider, heap);
    // The same against Anthropic's Messages API (pi-ai's other client library), silent after the
    // reply's first text delta.
    const anthropic = await startStallingProvider(readFixture("anthropic", "text"), 3);
    try {
      await inServerProcess(provider, {
        ...heap,
        model: { api: "anthropic", url: anthropic.url, label: "Anthropic Messages" },
      });
    } finally {
      await anthropic.close();
    }
  }
  if (run("concurrency")) {
    await inServerProcess(provider, {
      streams: CONCURRENCY,
      // Every stream writes a chunk a second for as long as it is watched, each on its own clock.
      script: { chunks: 1_000, paceMs: 1_000, stamp: true, fixedSchedule: true },
      heartbeatMs: 1_000,
      observeMs: 10_000,
    });
  }
  await provider.close();
}

/** throughput, latency, ttft: the server and the direct baseline in this process. */
async function inProcess(provider: BenchProvider): Promise<void> {
  const llm = createBenchLLM(provider.url);
  /** The request the server's last model call made: the direct baseline sends the same one. */
  let serverRequest: LLMCall["request"] | undefined;
  const recording: LLM = {
    ...llm,
    stream: (call) => {
      serverRequest = call.request;
      return llm.stream(call);
    },
  };
  const store = createMemoryStore();
  const server = await startServer(
    { store, llm: recording, runner: createRunner({ store, llm: recording }), log: silentLog },
    { ...DEFAULT_SERVER_OPTIONS, port: 0, runSseContentType: "connect" },
  );
  const directRequest = (): LLMCall["request"] =>
    serverRequest ?? {
      systemPrompt: "s",
      tools: [],
      messages: [{ role: "user", content: "go", timestamp: 1 }],
    };
  /**
   * The stream consumed with the LLM layer directly (one LLM layer, made once, as the server
   * keeps its own): when each chunk's text arrived.
   */
  const directLLM = createBenchLLM(provider.url);
  const direct = () => runDirect(directLLM, directRequest());
  const throughServer = async (): Promise<{ received: number[]; calledAt: number }> => {
    const received: number[] = [];
    const texts: string[] = [];
    const times: number[] = [];
    const { sentAt } = await runTurn(server.url, (text, at) => {
      texts.push(text);
      times.push(at);
    });
    texts.forEach((text, i) => {
      for (const index of indexesOf(text)) received[index] = times[i] as number;
    });
    return { received, calledAt: sentAt };
  };
  /**
   * The same turn from a client in a process of its own (turn-client.ts), as Cursor's clients
   * are; its epoch times in this process's `performance.now()` terms.
   */
  const clientProcess =
    run("latency") || run("ttft") || run("throughput") ? startTurnClient() : undefined;
  /** The client's own encoding of each IDE-sized append (turn-client.ts `encodeMs`). */
  const encodings: number[] = [];
  const throughClientProcess = async (
    ide = false,
    url = server.url,
  ): Promise<{ received: number[]; calledAt: number }> => {
    if (clientProcess === undefined) throw new Error("no client process");
    const times = await clientProcess.turn(url, ide);
    if (times.encodeMs !== undefined) encodings.push(times.encodeMs);
    const local = (at: number) => at - performance.timeOrigin;
    const received: number[] = [];
    times.received.forEach((at, i) => {
      if (at !== null) received[i] = local(at);
    });
    return { received, calledAt: local(times.sentAt) };
  };
  /**
   * The direct baseline in the client's process: the same model call with the LLM layer there,
   * no server. "Added" against it counts what the server adds for a client that is a process of
   * its own (as Cursor's are), not the cost of crossing into another process, which a client
   * talking to the provider itself pays too.
   */
  const directInClientProcess = async (): Promise<{ received: number[]; calledAt: number }> => {
    if (clientProcess === undefined) throw new Error("no client process");
    const times = await clientProcess.direct({
      providerUrl: provider.url,
      request: directRequest(),
    });
    const local = (at: number) => at - performance.timeOrigin;
    const received: number[] = [];
    times.received.forEach((at, i) => {
      if (at !== null) received[i] = local(at);
    });
    return { received, calledAt: local(times.sentAt) };
  };
  /** Deltas per second from the call to the last chunk's arrival. */
  const rate = ({ received, calledAt }: { received: number[]; calledAt: number }, n: number) =>
    n / (((received[n - 1] ?? Number.NaN) - calledAt) / 1000);

  provider.script = { chunks: 2_000, paceMs: 0 };
  await throughServer(); // warm up
  await direct();
  // The client process's code warms up too: at short lengths its ratio compares two paths of its
  // own, and with one cold turn each it swung from 0.4 to 2.
  for (
    let turn = 0;
    clientProcess !== undefined && turn < (run("throughput") ? 10 : 1);
    turn += 1
  ) {
    await throughClientProcess();
    await directInClientProcess();
  }

  if (run("throughput")) {
    print();
    print("throughput: unpaced text deltas, through the server ÷ directly (median of rounds)");
    for (const n of LENGTHS) {
      provider.script = { chunks: n, paceMs: 0 };
      const ratios: number[] = [];
      /** Through the server ÷ directly, both read in the client's process (up to 20k deltas). */
      const apart: number[] = [];
      const server: number[] = [];
      const base: number[] = [];
      const rounds = n >= 100_000 ? 2 : n >= 20_000 ? 3 : 5;
      for (let round = 0; round < rounds; round += 1) {
        const through = rate(await throughServer(), n);
        const directly = rate(await direct(), n);
        server.push(through);
        base.push(directly);
        ratios.push(through / directly);
        if (n <= 20_000) {
          apart.push(
            rate(await throughClientProcess(), n) / rate(await directInClientProcess(), n),
          );
        }
      }
      print(
        `  ${String(n).padStart(6)} deltas: server ${median(server).toFixed(0).padStart(6)}/s (${(1e6 / median(server)).toFixed(1)} µs each)   direct ${median(base).toFixed(0).padStart(6)}/s (${(1e6 / median(base)).toFixed(1)} µs)   ratio ${median(ratios).toFixed(2)}   [≥ 0.80]${apart.length === 0 ? "" : `   client in its own process: ratio ${median(apart).toFixed(2)}`}`,
      );
    }
    // A team server's calls go through the team gate (src/llm/gated-llm.ts): what it adds per
    // event, on the LLM layer alone (admission and settlement answered at once).
    const gated = gateLLM(createBenchLLM(provider.url), async () => ({
      type: "admitted",
      settle: async () => {},
      hold: async () => {},
    }));
    const gateRatios: number[] = [];
    provider.script = { chunks: GATE_DELTAS, paceMs: 0 };
    await runDirect(gated, directRequest());
    await runDirect(gated, directRequest());
    for (let round = 0; round < 5; round += 1) {
      const behind = rate(await runDirect(gated, directRequest()), GATE_DELTAS);
      gateRatios.push(behind / rate(await direct(), GATE_DELTAS));
    }
    print(
      `  the team gate, ${GATE_DELTAS} deltas: LLM layer behind it ÷ directly, ratio ${median(gateRatios).toFixed(2)}`,
    );
  }

  if (run("latency")) {
    provider.script = { chunks: 400, paceMs: 2 };
    const server: number[] = [];
    const apart: number[] = [];
    const base: number[] = [];
    const baseApart: number[] = [];
    const delays = (received: readonly number[]) =>
      provider.written.flatMap((at, i) => {
        const got = received[i];
        return got === undefined ? [] : [got - at];
      });
    for (let round = 0; round < 3; round += 1) {
      server.push(...delays((await throughServer()).received));
      apart.push(...delays((await throughClientProcess()).received));
      base.push(...delays((await direct()).received));
      baseApart.push(...delays((await directInClientProcess()).received));
    }
    const added = (values: readonly number[], baseline = base) =>
      `p50 ${ms(percentile(values, 50) - percentile(baseline, 50))} [≤ 0.150 ms]   p99 ${ms(percentile(values, 99) - percentile(baseline, 99))} [< 1.000 ms]`;
    print();
    print(`latency: provider chunk → its text on the client, paced 2 ms (${server.length} chunks)`);
    print(
      `  through the server, client in this process: p50 ${ms(percentile(server, 50))}   p99 ${ms(percentile(server, 99))}`,
    );
    print(
      `  through the server, client in its own:      p50 ${ms(percentile(apart, 50))}   p99 ${ms(percentile(apart, 99))}`,
    );
    print(
      `  LLM layer directly:                         p50 ${ms(percentile(base, 50))}   p99 ${ms(percentile(base, 99))}`,
    );
    print(
      `  LLM layer directly, in the client's process: p50 ${ms(percentile(baseApart, 50))}   p99 ${ms(percentile(baseApart, 99))}`,
    );
    print(`  added, client in this process: ${added(server)}`);
    print(`  added, client in its own:      ${added(apart)}`);
    print(
      `  added, client in its own, against the direct call in that process: ${added(apart, baseApart)}`,
    );
  }

  if (run("ttft")) {
    const chunks = 5;
    provider.script = { chunks, paceMs: 0 };
    const firstAfter = ({ received, calledAt }: { received: number[]; calledAt: number }) =>
      (received[0] ?? Number.NaN) - calledAt - ((provider.written[0] ?? 0) - provider.requestAt);
    /** From the provider's write of the last chunk (with the reply's end) to the client's text. */
    const lastAfter = ({ received }: { received: number[] }) =>
      (received[chunks - 1] ?? Number.NaN) - (provider.written[chunks - 1] ?? 0);
    /** `turns` turns of each kind, alternated. */
    const measure = async (turns: number) => {
      const times = {
        server: [] as number[],
        apart: [] as number[],
        base: [] as number[],
        baseApart: [] as number[],
        ide: [] as number[],
        lastApart: [] as number[],
        lastBaseApart: [] as number[],
      };
      for (let round = 0; round < turns; round += 1) {
        times.server.push(firstAfter(await throughServer()));
        const apart = await throughClientProcess();
        times.apart.push(firstAfter(apart));
        times.lastApart.push(lastAfter(apart));
        times.base.push(firstAfter(await direct()));
        const baseApart = await directInClientProcess();
        times.baseApart.push(firstAfter(baseApart));
        times.lastBaseApart.push(lastAfter(baseApart));
        // Last: the direct calls above send the request of a first turn, as before.
        times.ide.push(firstAfter(await throughClientProcess(true)));
      }
      return times;
    };
    // A server that has served a few dozen turns runs optimised code; the first turns of a
    // fresh process mostly measure how cold the code still is (printed apart).
    const cold = await measure(COLD_TURNS);
    encodings.length = 0;
    const { server, apart, base, baseApart, ide, lastApart, lastBaseApart } =
      await measure(WARM_TURNS);
    const added = (values: readonly number[], baseline = base) =>
      percentile(values, 50) - percentile(baseline, 50);
    const coldAdded = (values: readonly number[], baseline = cold.base) =>
      percentile(values, 50) - percentile(baseline, 50);
    print();
    print(
      `ttft: time to the first text delta minus the provider's own, ${WARM_TURNS} turns after the section's first ${COLD_TURNS}`,
    );
    print(
      `  through the server, client in this process: p50 ${ms(percentile(server, 50))}   p99 ${ms(percentile(server, 99))}`,
    );
    print(
      `  through the server, client in its own:      p50 ${ms(percentile(apart, 50))}   p99 ${ms(percentile(apart, 99))}`,
    );
    print(
      `  LLM layer directly:                         p50 ${ms(percentile(base, 50))}   p99 ${ms(percentile(base, 99))}`,
    );
    print(
      `  added, client in this process: p50 ${ms(added(server))} [< 2.000 ms]   (first ${COLD_TURNS} turns: ${ms(coldAdded(cold.server))})`,
    );
    print(
      `  LLM layer directly, in the client's process: p50 ${ms(percentile(baseApart, 50))}   p99 ${ms(percentile(baseApart, 99))}`,
    );
    print(
      `  added, client in its own:      p50 ${ms(added(apart))} [< 2.000 ms]   (first ${COLD_TURNS} turns: ${ms(coldAdded(cold.apart))})`,
    );
    print(
      `  added, client in its own, against the direct call in that process: p50 ${ms(added(apart, baseApart))} [< 2.000 ms]   (first ${COLD_TURNS} turns: ${ms(coldAdded(cold.apart, cold.baseApart))})`,
    );
    print(
      `  IDE-sized turn start (a ${IDE_CHECKPOINT_BYTES / 1000} KB checkpoint in the run request, hex over BidiAppend), client in its own: p50 ${ms(percentile(ide, 50))}   p99 ${ms(percentile(ide, 99))}`,
    );
    print(
      `  added, IDE-sized, client in its own: p50 ${ms(added(ide))} [< 2.000 ms]   (first ${COLD_TURNS} turns: ${ms(coldAdded(cold.ide))});   against the direct call in that process: p50 ${ms(added(ide, baseApart))} [< 2.000 ms]`,
    );
    print(
      `    of which the client's own encoding of its append (in its process): p50 ${ms(median(encodings))}`,
    );
    print(
      `  the reply's last text (it arrives with the reply's end, in one network read), provider's write → client, client in its own: p50 ${ms(percentile(lastApart, 50))}   p99 ${ms(percentile(lastApart, 99))};   the direct call in that process: p50 ${ms(percentile(lastBaseApart, 50))};   added p50 ${ms(added(lastApart, lastBaseApart))}`,
    );
    // The same turns through a server as `npm start` runs it, on SQLite: a turn's start is one
    // commit, fsynced before the model call is sent (docs/design.md §7), which the store above
    // (in memory) does not pay. Its code is warm already but for the store's.
    const dir = mkdtempSync(join(DB_DIR, "cursor-byok-bench-"));
    const disk = openSqliteStore({ path: join(dir, "bench.db"), backgroundCheckpoints: true });
    const onDisk = await startServer(
      {
        store: disk,
        llm: recording,
        runner: createRunner({ store: disk, llm: recording }),
        log: silentLog,
      },
      { ...DEFAULT_SERVER_OPTIONS, port: 0, runSseContentType: "connect" },
    );
    const measureOnDisk = async (turns: number) => {
      const times = { apart: [] as number[], baseApart: [] as number[], ide: [] as number[] };
      for (let round = 0; round < turns; round += 1) {
        times.apart.push(firstAfter(await throughClientProcess(false, onDisk.url)));
        times.baseApart.push(firstAfter(await directInClientProcess()));
        times.ide.push(firstAfter(await throughClientProcess(true, onDisk.url)));
      }
      return times;
    };
    try {
      await measureOnDisk(DISK_WARM_UP_TURNS);
      const sqlite = await measureOnDisk(WARM_TURNS);
      print(
        `  through a server on SQLite as \`npm start\` runs it (a turn's start is a commit, fsynced before the model call is sent; database in ${DB_DIR}), client in its own, against the direct call in that process: added p50 ${ms(added(sqlite.apart, sqlite.baseApart))} [< 2.000 ms];   IDE-sized: added p50 ${ms(added(sqlite.ide, sqlite.baseApart))} [< 2.000 ms]`,
      );
    } finally {
      await onDisk.close();
      await disk.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  clientProcess?.close();
  await server.close();
  await store.close();
}

/** turn-client.ts in a child process: one turn per request, answered in order. */
function startTurnClient(): {
  /** `ide`: with an IDE-sized checkpoint in the run request (turn-client.ts `IDE`). */
  turn(url: string, ide?: boolean): Promise<TurnTimes>;
  direct(call: DirectCall): Promise<TurnTimes>;
  close(): void;
} {
  const child = spawn(process.execPath, [join(import.meta.dirname, "turn-client.ts")], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  // Bounded like every child of this benchmark, whatever happens to this process's code.
  const bound = setTimeout(() => child.kill("SIGKILL"), 15 * 60_000);
  bound.unref();
  const waiting: { resolve(times: TurnTimes): void; reject(error: Error): void }[] = [];
  child.once("exit", () => {
    for (const turn of waiting.splice(0)) turn.reject(new Error("the turn client process ended"));
  });
  onLines(child, (line) => {
    if (line.startsWith("TURN ")) waiting.shift()?.resolve(JSON.parse(line.slice(5)) as TurnTimes);
  });
  const ask = (line: string) =>
    new Promise<TurnTimes>((resolve, reject) => {
      waiting.push({ resolve, reject });
      child.stdin?.write(`${line}\n`);
    });
  return {
    turn: (url, ide = false) => ask(ide ? `IDE ${url}` : url),
    direct: (call) => ask(`DIRECT ${JSON.stringify(call)}`),
    close() {
      clearTimeout(bound);
      child.stdin?.end();
    },
  };
}

interface ServerProcessRun {
  readonly streams: number;
  readonly script: BenchProvider["script"];
  readonly heartbeatMs: number;
  /** How long the streams are watched once all are open (or opening them stopped). */
  readonly observeMs: number;
  /**
   * Then as many again, measured the same way: what one more stream costs once the server has
   * compiled and sized itself for the first batch (V8's one-off code, feedback and hidden
   * classes are in the first batch's figure, not in this one).
   */
  readonly secondBatch?: boolean;
  /**
   * Runs the server with `--no-flush-bytecode`. V8 drops the bytecode of functions unused for a
   * while, and with it, in a server started from TypeScript, the 3.7 MiB source of Node's type
   * stripper, loaded once at start: when that happened between two memory reports, the second
   * batch's figure fell by ≈ 25 KiB per stream (31–33 KiB against 56–57, in 6 of 11 runs), though
   * no stream took less. Kept, the figure is what the streams added (56.8–57.1 in 7 of 7).
   */
  readonly keepBytecode?: boolean;
  /** Another provider than the bench's (OpenAI-compatible Chat Completions), by its API. */
  readonly model?: { readonly api: "anthropic"; readonly url: string; readonly label: string };
}

/**
 * `streams` conversations at once against a server in its own process (SQLite store, run with
 * --expose-gc so its memory reports follow a full collection). Bounded: the child is killed
 * after `observeMs` plus a margin, whatever happens.
 */
async function inServerProcess(provider: BenchProvider, settings: ServerProcessRun): Promise<void> {
  const { streams, heartbeatMs, observeMs } = settings;
  const batches = settings.secondBatch === true ? 2 : 1;
  const dir = mkdtempSync(join(DB_DIR, "cursor-byok-bench-"));
  const child = spawn(
    process.execPath,
    [
      "--expose-gc",
      ...(settings.keepBytecode === true ? ["--no-flush-bytecode"] : []),
      join(import.meta.dirname, "..", "src", "transport", "e2e", "test-server-process.ts"),
      JSON.stringify({
        providerUrl: settings.model?.url ?? provider.url,
        ...(settings.model === undefined ? {} : { api: settings.model.api }),
        apiKey: "k",
        model: MODEL,
        dbPath: join(dir, "db"),
        port: 0,
        heartbeatMs,
        runSseContentType: "connect",
        // A report (after a full collection) only when asked: before and after, never while the
        // streams are measured.
        reportMemoryOnRequest: true,
        // Above the defaults (1,000 each): every conversation holds a RunSSE and a BidiAppend
        // connection (HTTP/1.1) and one agent stream.
        maxStreams: 2 * batches * streams + 100,
        maxConnections: 4 * batches * streams + 100,
      }),
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const bound = setTimeout(
    () => child.kill("SIGKILL"),
    batches * (OPEN_LIMIT_MS + observeMs) + 60_000,
  );
  const memory = memoryReports(child);
  const url = await memory.listening;
  const rss = () =>
    Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1] ?? 0) *
    1024;

  // One turn first (warm-up), ended once its first message arrived.
  provider.script = { chunks: 1, paceMs: 0, stallAfter: 1 };
  const warmUp = new AbortController();
  await runTurn(
    url,
    () => {},
    () => warmUp.abort(),
    warmUp.signal,
  ).catch(() => {});
  const before = await memory.next();
  const rssBefore = rss();

  provider.script = settings.script;
  // The conversations are opened and read by client processes of their own (stream-clients.ts),
  // at most CLIENTS_PER_PROCESS each, so that neither this process (the provider, which stamps
  // the chunks) nor the server is starved by the clients.
  const processes = Math.max(1, Math.ceil(streams / CLIENTS_PER_PROCESS));
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /**
   * Opens `streams` more conversations and waits until every one is open or failed (at most
   * OPEN_LIMIT_MS).
   */
  const openBatch = async (): Promise<Clients[]> => {
    const batch = Array.from({ length: processes }, (_, k) =>
      startClients({
        url,
        streams: Math.floor(streams / processes) + (k < streams % processes ? 1 : 0),
        // As fast as the server opens them: a burst of thousands of connections at once would
        // overflow its listen backlog (and the clients would measure the kernel's drops).
        maxOpening: Math.max(1, Math.round(MAX_OPENING / processes)),
        maxMs: batches * (OPEN_LIMIT_MS + observeMs) + 45_000,
        client: CLIENT,
      }),
    );
    const settled = () => batch.reduce((sum, client) => sum + client.open + client.failed, 0);
    const since = Date.now();
    while (settled() < streams && Date.now() - since < OPEN_LIMIT_MS) await sleep(100);
    return batch;
  };
  const startedAt = Date.now();
  // Watched for `observeMs` once every stream is open; memory is read at the end of that.
  const clients = await openBatch();
  const watchedFrom = Date.now();
  // The server's own pauses, counted from here (the opening's are not the steady state's); the
  // client processes' too.
  for (const client of clients) client.mark();
  const ownPauses = watchPauses();
  await memory.pauses();
  await sleep(observeMs);
  const pauses = await memory.pauses();
  const providerPauses = ownPauses.take();
  ownPauses.stop();
  /** Streams open in `batch` now (a stream opened after the memory was read is not in it). */
  const openNow = (batch: readonly Clients[]) =>
    batch.reduce((sum, client) => sum + client.open, 0);
  const after = await memory.next();
  const rssAfter = rss();
  const openAtFirst = openNow(clients);
  const second =
    batches === 2
      ? await openBatch().then(async (batch) => {
          await sleep(observeMs);
          const memoryNow = await memory.next();
          // Streams opened since the first reading, late ones of the first batch included.
          return {
            batch,
            memory: memoryNow,
            rss: rss(),
            open: openNow([...clients, ...batch]) - openAtFirst,
          };
        })
      : undefined;
  const results = await Promise.all(
    [...clients, ...(second?.batch ?? [])].map((client) => client.stop()),
  );
  clearTimeout(bound);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
  rmSync(dir, { recursive: true, force: true });

  const openIn = (from: number, to?: number) =>
    results.slice(from, to).reduce((sum, result) => sum + result.open, 0);
  const opened = openIn(0, clients.length);
  const failures = results.reduce((sum, result) => sum + result.failures, 0);
  const firstFailure = results.find((result) => result.firstFailure !== undefined)?.firstFailure;
  // Chunks that arrived once every stream was open (the steady state), and before (while the
  // server was also opening conversations).
  const steady: number[] = [];
  const opening: number[] = [];
  for (const result of results) {
    result.chunkDelays.forEach((delay, i) => {
      ((result.chunkTimes[i] ?? 0) >= watchedFrom ? steady : opening).push(delay);
    });
  }
  const gaps = results.flatMap((result) => result.gaps);
  // NaN (a process did not open all of its streams) arrives as null.
  const allOpenAt = Math.max(...results.map((result) => result.allOpenAt ?? Number.NaN));
  print();
  if (settings.script.stamp === true) {
    print(
      `concurrency: ${streams} conversations on a server process (SQLite in ${DB_DIR}), each streaming a chunk a second; heartbeat ${heartbeatMs} ms; watched ${observeMs / 1000} s once all were open`,
    );
    print(
      `  streams open: ${opened} of ${streams} (${Number.isNaN(allOpenAt) ? "not all" : `all after ${ms(allOpenAt - startedAt)}`}; ${processes} client processes, ${CLIENT} client)   failed: ${failures}${firstFailure === undefined ? "" : ` (first: ${firstFailure})`}`,
    );
    print(
      `  chunk → client, all open: p50 ${ms(percentile(steady, 50))}   p99 ${ms(percentile(steady, 99))} [< 50 ms]   (${steady.length} chunks)`,
    );
    print(
      `  chunk → client while opening: p50 ${ms(percentile(opening, 50))}   p99 ${ms(percentile(opening, 99))}   (${opening.length} chunks)`,
    );
    print(
      `  longest silence on a stream: ${ms(gaps.reduce((longest, gap) => Math.max(longest, gap), 0))} [≤ 5,000 ms]   gaps p99 ${ms(percentile(gaps, 99))}${opened < streams ? "   (not met: not every stream opened)" : ""}`,
    );
    print(`  the server process meanwhile: ${toPauseLine(pauses)}`);
    print(`  the provider's process (this one) meanwhile: ${toPauseLine(providerPauses)}`);
    results.slice(0, clients.length).forEach((result, k) => {
      print(`  client process ${k + 1} meanwhile: ${toPauseLine(result.pauses)}`);
    });
  } else {
    print(
      `heap: ${streams} open, silent conversations on a server process (after a full GC)${settings.model === undefined ? "" : `, the model behind ${settings.model.label}`}`,
    );
  }
  const perStream = (
    label: string,
    from: { memory: Memory; rss: number },
    to: { memory: Memory; rss: number },
    count: number,
    target: string,
  ) =>
    print(
      `  ${label}: ${kib((to.memory.heapUsed - from.memory.heapUsed) / Math.max(1, count))}${target}   off-heap (external) per stream: ${kib((to.memory.external - from.memory.external) / Math.max(1, count))}   RSS per stream: ${kib((to.rss - from.rss) / Math.max(1, count))}   (heap ${(from.memory.heapUsed / 2 ** 20).toFixed(1)} → ${(to.memory.heapUsed / 2 ** 20).toFixed(1)} MiB, ${count} streams)`,
    );
  const first = { memory: after, rss: rssAfter };
  if (second === undefined) {
    perStream(
      "live heap per open stream",
      { memory: before, rss: rssBefore },
      first,
      openAtFirst,
      "",
    );
    return;
  }
  perStream(
    `live heap per open stream, the first ${streams} (with one-off compiled code)`,
    { memory: before, rss: rssBefore },
    first,
    openAtFirst,
    "",
  );
  perStream(
    `live heap per open stream, ${streams} more`,
    first,
    second,
    second.open,
    " [≤ 48 KiB]",
  );
}

function toPauseLine(pauses: PauseReport): string {
  return `event loop busy ${(100 * pauses.busy).toFixed(0)}%, late p50 ${ms(pauses.loopDelay.p50)}  p99 ${ms(pauses.loopDelay.p99)}  max ${ms(pauses.loopDelay.max)};   young-generation collections ${pauses.minor.count} (longest ${ms(pauses.minor.max)}, ${ms(pauses.minor.total)} in all), full ${pauses.major.count} (longest ${ms(pauses.major.max)});   waited for a CPU ${pauses.cpuWaitMs === undefined ? "(unknown)" : ms(pauses.cpuWaitMs)} (${pauses.involuntarySwitches} times taken off one)`;
}

interface Clients {
  /** Conversations open / failed so far (from the process's progress reports). */
  readonly open: number;
  readonly failed: number;
  /** Its own pauses are counted from now. */
  mark(): void;
  /** Aborts the process's conversations and resolves with what it measured. */
  stop(): Promise<ClientResult>;
}

/** One client process (stream-clients.ts); killed if it has not answered `stop` in 30 s. */
function startClients(settings: ClientSettings): Clients {
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, "stream-clients.ts"), JSON.stringify(settings)],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const state = { open: 0, failed: 0 };
  let resolveResult: (result: ClientResult) => void = () => {};
  const result = new Promise<ClientResult>((resolve) => {
    resolveResult = resolve;
  });
  const empty: ClientResult = {
    open: 0,
    allOpenAt: Number.NaN,
    chunkDelays: [],
    chunkTimes: [],
    gaps: [],
    failures: settings.streams,
    firstFailure: "the client process ended without a result",
    pauses: {
      ms: 0,
      loopDelay: { p50: Number.NaN, p99: Number.NaN, max: Number.NaN },
      busy: Number.NaN,
      minor: { count: 0, max: 0, total: 0 },
      major: { count: 0, max: 0, total: 0 },
      cpuWaitMs: undefined,
      involuntarySwitches: 0,
    },
  };
  child.once("exit", () => resolveResult(empty));
  onLines(child, (line) => {
    const progress = /^PROGRESS (\d+) (\d+)$/.exec(line);
    if (progress !== null) {
      state.open = Number(progress[1]);
      state.failed = Number(progress[2]);
    }
    if (line.startsWith("RESULT ")) resolveResult(JSON.parse(line.slice(7)) as ClientResult);
  });
  return {
    get open() {
      return state.open;
    },
    get failed() {
      return state.failed;
    },
    mark() {
      child.stdin?.write("mark\n");
    },
    stop() {
      child.stdin?.end("stop\n");
      const kill = setTimeout(() => child.kill("SIGKILL"), 30_000);
      return result.finally(() => clearTimeout(kill));
    },
  };
}

interface Memory {
  readonly heapUsed: number;
  readonly rss: number;
  /** Off the JS heap: ArrayBuffer contents (socket and body buffers) and other native memory. */
  readonly external: number;
}

/**
 * The child's `LISTENING` address, a `MEMORY` report on request (taken after a full GC), and a
 * `PAUSES` report on request (since the previous one; no collection).
 */
function memoryReports(child: ChildProcess): {
  readonly listening: Promise<string>;
  next(): Promise<Memory>;
  pauses(): Promise<PauseReport>;
} {
  let resolveListening: (url: string) => void = () => {};
  const listening = new Promise<string>((resolve) => {
    resolveListening = resolve;
  });
  let waiting: ((memory: Memory) => void)[] = [];
  let waitingPauses: ((report: PauseReport) => void)[] = [];
  onLines(child, (line) => {
    const address = /^LISTENING (\S+)$/.exec(line)?.[1];
    if (address !== undefined) resolveListening(address);
    if (line.startsWith("MEMORY ")) {
      const memory = JSON.parse(line.slice("MEMORY ".length)) as Memory;
      const wake = waiting;
      waiting = [];
      for (const resolve of wake) resolve(memory);
    }
    if (line.startsWith("PAUSES ")) {
      const report = JSON.parse(line.slice("PAUSES ".length)) as PauseReport;
      const wake = waitingPauses;
      waitingPauses = [];
      for (const resolve of wake) resolve(report);
    }
  });
  return {
    listening,
    next: () =>
      new Promise<Memory>((resolve) => {
        waiting.push(resolve);
        child.stdin?.write("memory\n");
      }),
    pauses: () =>
      new Promise<PauseReport>((resolve) => {
        waitingPauses.push(resolve);
        child.stdin?.write("pauses\n");
      }),
  };
}

/** Calls `onLine` with each line the child writes on its standard output. */
function onLines(child: ChildProcess, onLine: (line: string) => void): void {
  let out = "";
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (text: string) => {
    out += text;
    for (let newline = out.indexOf("\n"); newline >= 0; newline = out.indexOf("\n")) {
      onLine(out.slice(0, newline));
      out = out.slice(newline + 1);
    }
  });
}

await main();
