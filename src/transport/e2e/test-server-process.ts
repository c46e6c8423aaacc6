/**
 * The server in a process of its own, for tests that kill it: started with a JSON argument
 * `{ providerUrl, apiKey, dbPath, port }`, it prints `LISTENING <url>` once it serves and runs
 * until it is killed (SIGTERM shuts it down cleanly). With `killAfterWrite: n` it SIGKILLs
 * itself right after its n-th store write (a commit point) has completed, before the server
 * acts on it: a crash at that exact point.
 */
import { createInterface } from "node:readline";
import { createLLM, createModelConfigs } from "../../llm/index.ts";
import { createRunner } from "../../runner/runner.ts";
import {
  openClusterDirectory,
  openPostgresStore,
  openPostgresUsers,
  openSqliteStore,
  type Store,
} from "../../store/index.ts";
import { silentLog } from "../log.ts";
import { DEFAULT_SERVER_OPTIONS, startServer } from "../server.ts";
import { watchPauses } from "./pauses.ts";

interface Settings {
  readonly providerUrl: string;
  /** The provider's API (default an OpenAI-compatible Chat Completions server). */
  readonly api?: "openai-compatible" | "anthropic";
  readonly apiKey: string;
  readonly model: string;
  readonly dbPath: string;
  readonly port: number;
  /**
   * PostgreSQL instead of the SQLite file, as one of several instances (docs/team.md): the
   * stream directory's instance id, and its lease. `port` must then be given (not 0): it is the
   * address the other instances forward to.
   */
  readonly databaseUrl?: string;
  readonly instanceID?: string;
  readonly leaseMs?: number;
  /** Where the others forward to; default this process's own address. */
  readonly advertiseUrl?: string;
  /** With `databaseUrl`: clients authenticate with the team users' tokens (docs/team.md). */
  readonly users?: boolean;
  /** Overrides the heartbeat interval (benchmarks). */
  readonly heartbeatMs?: number;
  /** Overrides the RunSSE content type (benchmarks use a stock Connect client). */
  readonly runSseContentType?: "event-stream" | "connect";
  /** SIGKILL right after this store write (1-based); absent: never. */
  readonly killAfterWrite?: number;
  /** The first save of a tool call's result (`completed`) never completes: a stalled disk. */
  readonly stallToolResultSave?: boolean;
  /** Overrides how long a blob read waits for the client's answer. */
  readonly blobReadTimeoutMs?: number;
  /** Overrides how long a recovered tool call waits for a late result. */
  readonly lateResultGraceMs?: number;
  /** Overrides how long a RunSSE envelope may take to arrive. */
  readonly envelopeTimeoutMs?: number;
  /** False: inline checkpoints, no blob writes (for clients that do not answer KV). */
  readonly blobCheckpoints?: boolean;
  /** Overrides the most agent streams and open connections (the concurrency benchmark). */
  readonly maxStreams?: number;
  readonly maxConnections?: number;
  /**
   * Prints `MEMORY <json>` (rss, heapUsed, external) this often, after a full collection when
   * the process runs with `--expose-gc` (the soak).
   */
  readonly reportMemoryMs?: number;
  /**
   * Prints one such report for every line read on standard input, and never otherwise: a
   * benchmark that measures latency must not have the server stop for a full collection twice a
   * second. A `pauses` line instead prints `PAUSES <json>` (pauses.ts `PauseReport`): how late
   * the event loop ran and the garbage collector's pauses since the previous `pauses` line (no
   * collection of its own).
   */
  readonly reportMemoryOnRequest?: boolean;
}

/** The store methods that write: every commit point of a turn is one of their calls. */
const WRITES = new Set<string>([
  "commitInput",
  "saveLLMCall",
  "setLLMCallStatus",
  "saveClientOperation",
  "setClientOperationStatus",
]);

const settings = JSON.parse(process.argv[2] ?? "{}") as Settings;
const store = withKillPoint(
  settings.databaseUrl === undefined
    ? // As the server's store (cli/open-store.ts): the crash suites kill it with its WAL worker.
      openSqliteStore({ path: settings.dbPath, backgroundCheckpoints: true })
    : await openPostgresStore({ url: settings.databaseUrl, poolSize: 4 }),
  settings.killAfterWrite,
  settings.stallToolResultSave === true,
);
const cluster =
  settings.databaseUrl === undefined
    ? undefined
    : await openClusterDirectory({
        url: settings.databaseUrl,
        instanceID: settings.instanceID ?? `instance-${process.pid}`,
        advertiseUrl: settings.advertiseUrl ?? `http://127.0.0.1:${settings.port}`,
        ...(settings.leaseMs === undefined ? {} : { leaseMs: settings.leaseMs }),
      });
const llm = createLLM({
  models: createModelConfigs([
    {
      name: settings.model,
      ...(settings.api === "anthropic"
        ? { api: "anthropic", model: "claude-sonnet-4-5" }
        : { api: "openai-compatible", model: "scripted-model" }),
      baseUrl: settings.providerUrl,
      apiKey: settings.apiKey,
    },
  ]),
  retry: { sleep: async () => {}, maxAttempts: 3 },
});
const users =
  settings.databaseUrl !== undefined && settings.users === true
    ? openPostgresUsers({ url: settings.databaseUrl })
    : undefined;
const server = await startServer(
  {
    store,
    llm,
    runner: createRunner({ store, llm }),
    log: silentLog,
    ...(cluster === undefined ? {} : { cluster }),
    ...(users === undefined ? {} : { authenticate: (token: string) => users.authenticate(token) }),
  },
  {
    ...DEFAULT_SERVER_OPTIONS,
    port: settings.port,
    runSseContentType: settings.runSseContentType ?? DEFAULT_SERVER_OPTIONS.runSseContentType,
    envelopeTimeoutMs: settings.envelopeTimeoutMs ?? DEFAULT_SERVER_OPTIONS.envelopeTimeoutMs,
    maxStreams: settings.maxStreams ?? DEFAULT_SERVER_OPTIONS.maxStreams,
    listen: {
      ...DEFAULT_SERVER_OPTIONS.listen,
      maxConnections: settings.maxConnections ?? DEFAULT_SERVER_OPTIONS.listen.maxConnections,
    },
    stream: {
      ...DEFAULT_SERVER_OPTIONS.stream,
      heartbeatMs: settings.heartbeatMs ?? DEFAULT_SERVER_OPTIONS.stream.heartbeatMs,
      lateResultGraceMs:
        settings.lateResultGraceMs ?? DEFAULT_SERVER_OPTIONS.stream.lateResultGraceMs,
      ...(settings.blobCheckpoints === undefined
        ? {}
        : { blobCheckpoints: settings.blobCheckpoints }),
      ...(settings.blobReadTimeoutMs === undefined
        ? {}
        : { blobReadTimeoutMs: settings.blobReadTimeoutMs }),
    },
  },
);
process.stdout.write(`LISTENING ${server.url}\n`);
const reportMemory = (): void => {
  (globalThis as { gc?: () => void }).gc?.();
  const { rss, heapUsed, heapTotal, external, arrayBuffers } = process.memoryUsage();
  process.stdout.write(
    `MEMORY ${JSON.stringify({ rss, heapUsed, heapTotal, external, arrayBuffers })}\n`,
  );
};
if (settings.reportMemoryMs !== undefined) {
  setInterval(reportMemory, settings.reportMemoryMs).unref();
}
if (settings.reportMemoryOnRequest === true) {
  const pauses = watchPauses();
  createInterface({ input: process.stdin }).on("line", (line) => {
    if (line !== "pauses") return reportMemory();
    process.stdout.write(`PAUSES ${JSON.stringify(pauses.take())}\n`);
  });
}
process.once("SIGTERM", () => {
  void (async () => {
    await cluster?.leave();
    await server.close();
    await store.close();
    await cluster?.close();
    await users?.close();
  })();
});

/**
 * `store`, SIGKILLing this process once its `killAfter`-th write has completed; `stall`: the
 * first save of a tool call's result never completes (the test kills the process).
 */
function withKillPoint(store: Store, killAfter: number | undefined, stall: boolean): Store {
  if (killAfter === undefined && !stall) return store;
  let writes = 0;
  let stalled = false;
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof key !== "string" || !WRITES.has(key) || typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        if (stall && !stalled && key === "setClientOperationStatus" && args[1] === "completed") {
          stalled = true;
          process.stdout.write("STALLED the save of a tool call's result\n");
          await new Promise(() => {});
        }
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        writes += 1;
        if (writes === killAfter) {
          process.stdout.write(`KILLED after write ${writes} (${key})\n`);
          process.kill(process.pid, "SIGKILL");
          // SIGKILL cannot be caught; never go on while it is being delivered.
          await new Promise(() => {});
        }
        return result;
      };
    },
  });
}
