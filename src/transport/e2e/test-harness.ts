/**
 * End-to-end harness: the real server (startServer) on 127.0.0.1 with the real runner, loop,
 * dialect and store, a fake OpenAI-compatible provider on 127.0.0.1 answering scripted replies,
 * and the protocol-faithful Cursor test client working in a temporary workspace.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createLLM, createModelConfigs, type HealthPolicy, type LLM } from "../../llm/index.ts";
import { type ScriptedReply, toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import { type FakeProvider, startFakeProvider } from "../../llm/testing/fake-provider.ts";
import { createRunner } from "../../runner/runner.ts";
import type { Runner } from "../../runner/types.ts";
import { createMemoryStore, openSqliteStore, type Store } from "../../store/index.ts";
import { type AgentServerMessage, AgentService } from "../cursor/index.ts";
import { createRecordingLog, type LogLine, logModelSwitches, logRunnerErrors } from "../log.ts";
import { DEFAULT_SERVER_OPTIONS, type Server, type ServerOptions, startServer } from "../server.ts";
import {
  type CursorClient,
  type CursorClientOptions,
  createCursorClient,
} from "../testing/index.ts";
import type { WebTools } from "../web-work.ts";

export const MODEL = "scripted";
export const API_KEY = "sk-e2e-not-a-real-key-1234567890";

export type { LogLine };

export interface Harness {
  readonly provider: FakeProvider;
  /** The in-process server's LLM layer (e.g. for its model health). */
  readonly llm: LLM;
  readonly store: Store;
  readonly workspace: string;
  readonly logs: LogLine[];
  /** Resolves once the in-process server has logged `message` (at once if it has). */
  untilLog(message: string): Promise<void>;
  server: Server;
  /** Queues scripted model replies (an SSE transcript each). */
  reply(...replies: ScriptedReply[]): void;
  client(options?: Partial<CursorClientOptions>): CursorClient;
  /**
   * Mode `process`: kills the server process with SIGKILL (if it still runs) and starts a new one
   * on the same file and port; the new one has no kill point. In-process: a graceful restart,
   * `server.close()` (if not done yet) and a new server with a new runner on the same store and
   * port.
   */
  restart(): Promise<void>;
  /** Resolves when the current server process has exited (mode `process`). */
  exited(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  readonly server?: Partial<ServerOptions>;
  /**
   * `process`: the server runs in a child process on a SQLite file, so that `restart` can kill it
   * with SIGKILL, as a crash would. Otherwise it runs in this process on an in-memory store.
   */
  readonly mode?: "in-process" | "process";
  /**
   * The configured models (plain config objects, as in the config file), given the fake
   * provider's URL; in-process only. Default: one OpenAI-compatible model named `MODEL`.
   */
  readonly models?: (providerUrl: string) => readonly Record<string, unknown>[];
  /** The LLM layer's cool-down policy (model-health.ts). */
  readonly health?: Partial<HealthPolicy>;
  /** In-process: the provider calls' HTTP client (default: the LLM layer's own, http-fetch.ts). */
  readonly fetch?: typeof fetch;
  /** The web tools of the in-process server (none: web_search and web_fetch are not offered). */
  readonly web?: WebTools;
  /** In-process: wraps each server's runner (e.g. a shutdown that takes a while). */
  readonly runner?: (runner: Runner) => Runner;
  /** Mode `process`: settings of the first server process (kill point, late-result grace). */
  readonly process?: {
    readonly killAfterWrite?: number;
    /**
     * The first save of a tool call's result never completes (a stalled disk): the test kills the
     * process (`restart`) once the client holds what it was sent meanwhile.
     */
    readonly stallToolResultSave?: boolean;
    /** Overrides the heartbeat interval (a test that waits for one). */
    readonly heartbeatMs?: number;
    /** Overrides how long a blob read waits for the client's answer (every process). */
    readonly blobReadTimeoutMs?: number;
    readonly lateResultGraceMs?: number;
    readonly envelopeTimeoutMs?: number;
    /** False: inline checkpoints (a raw reader that does not answer blob writes). */
    readonly blobCheckpoints?: boolean;
  };
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const provider = await startFakeProvider();
  const workspace = mkdtempSync(join(tmpdir(), "cursor-byok-e2e-"));
  const dbPath = join(workspace, "..", `${workspace.split("/").at(-1)}.db`);
  const inChild = options.mode === "process";
  const store: Store = inChild ? openSqliteStore({ path: dbPath }) : createMemoryStore();
  const { log, lines: logs, until: untilLog } = createRecordingLog();
  const llm = createLLM({
    models: createModelConfigs(
      options.models?.(provider.url) ?? [
        {
          name: MODEL,
          api: "openai-compatible",
          model: "scripted-model",
          baseUrl: provider.url,
          apiKey: API_KEY,
        },
      ],
    ),
    retry: { sleep: async () => {}, maxAttempts: 3 },
    ...(options.health === undefined ? {} : { health: options.health }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  const serverOptions: ServerOptions = {
    ...DEFAULT_SERVER_OPTIONS,
    port: 0,
    ...options.server,
    stream: { ...DEFAULT_SERVER_OPTIONS.stream, ...options.server?.stream },
  };
  const start = (port: number, first: boolean): Promise<Server> =>
    inChild
      ? startServerProcess({
          providerUrl: provider.url,
          apiKey: API_KEY,
          model: MODEL,
          dbPath,
          port,
          ...(options.process?.lateResultGraceMs === undefined
            ? {}
            : { lateResultGraceMs: options.process.lateResultGraceMs }),
          ...(options.process?.envelopeTimeoutMs === undefined
            ? {}
            : { envelopeTimeoutMs: options.process.envelopeTimeoutMs }),
          ...(options.process?.blobCheckpoints === undefined
            ? {}
            : { blobCheckpoints: options.process.blobCheckpoints }),
          ...(options.server?.runSseContentType === undefined
            ? {}
            : { runSseContentType: options.server.runSseContentType }),
          ...(first && options.process?.killAfterWrite !== undefined
            ? { killAfterWrite: options.process.killAfterWrite }
            : {}),
          ...(first && options.process?.stallToolResultSave === true
            ? { stallToolResultSave: true }
            : {}),
          ...(options.process?.heartbeatMs === undefined
            ? {}
            : { heartbeatMs: options.process.heartbeatMs }),
          ...(options.process?.blobReadTimeoutMs === undefined
            ? {}
            : { blobReadTimeoutMs: options.process.blobReadTimeoutMs }),
        })
      : startServer(
          {
            store,
            llm,
            runner: (options.runner ?? ((runner) => runner))(
              createRunner({
                store,
                llm,
                onError: logRunnerErrors(log),
                onModelSwitch: logModelSwitches(log),
              }),
            ),
            log,
            ...(options.web === undefined ? {} : { web: options.web }),
          },
          { ...serverOptions, port },
        );
  const clients: CursorClient[] = [];
  const harness: Harness = {
    provider,
    llm,
    store,
    workspace,
    logs,
    untilLog,
    server: await start(serverOptions.port, true),
    reply(...replies) {
      provider.reply(
        ...replies.map((reply) => ({ type: "sse", body: toChatCompletionSse(reply) }) as const),
      );
    },
    client(clientOptions = {}) {
      const client = createCursorClient({
        baseUrl: harness.server.url,
        httpVersion: "1.1",
        workspace,
        timeoutMs: 15_000,
        ...clientOptions,
      });
      clients.push(client);
      return client;
    },
    async restart() {
      const port = harness.server.address.port;
      if (inChild) await (harness.server as ChildServer).kill();
      else await harness.server.close();
      harness.server = await start(port, false);
    },
    exited() {
      if (!inChild) throw new Error("exited needs mode: process");
      return (harness.server as ChildServer).exited;
    },
    async close() {
      for (const client of clients) await client.close();
      await harness.server.close();
      await store.close();
      await provider.close();
      rmSync(workspace, { recursive: true, force: true });
      rmSync(dbPath, { force: true });
      rmSync(`${dbPath}-wal`, { force: true });
      rmSync(`${dbPath}-shm`, { force: true });
    },
  };
  return harness;
}

/** A promise with its resolve function, for gating a scripted client or provider. */
export function createGate(): { readonly promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

export interface ChildServer extends Server {
  kill(): Promise<void>;
  readonly exited: Promise<void>;
}

/** Runs test-server-process.ts in a child process and resolves once it listens. */
export async function startServerProcess(settings: {
  providerUrl: string;
  apiKey: string;
  model: string;
  dbPath: string;
  port: number;
  killAfterWrite?: number;
  stallToolResultSave?: boolean;
  heartbeatMs?: number;
  blobReadTimeoutMs?: number;
  lateResultGraceMs?: number;
  envelopeTimeoutMs?: number;
  blobCheckpoints?: boolean;
  databaseUrl?: string;
  instanceID?: string;
  leaseMs?: number;
  users?: boolean;
  advertiseUrl?: string;
}): Promise<ChildServer> {
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, "test-server-process.ts"), JSON.stringify(settings)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      out += chunk;
      const match = /LISTENING (\S+)\n/.exec(out);
      if (match?.[1] !== undefined) resolve(match[1]);
    });
    child.once("exit", (code) =>
      reject(new Error(`the server process exited (${code}) before listening`)),
    );
  });
  const port = Number(new URL(url).port);
  const stop = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return {
    url,
    address: { address: "127.0.0.1", family: "IPv4", port },
    close: () => stop("SIGTERM"),
    // The child process flushes its own before it leaves its cluster (cli/serve.ts).
    flushTurnBlobs: async () => {},
    kill: () => stop("SIGKILL"),
    exited,
  };
}

/**
 * Reads a RunSSE for `requestId` to its end with a plain Connect client: the kinds of the messages,
 * the messages, and the error it ended with (the server's RunSSE in Connect's framing:
 * `runSseContentType`).
 */
export async function readRunSse(
  harness: Harness,
  requestId: string,
): Promise<{ kinds: string[]; messages: AgentServerMessage[]; error: ConnectError | undefined }> {
  const kinds: string[] = [];
  const messages: AgentServerMessage[] = [];
  try {
    for await (const message of createClient(
      AgentService,
      createConnectTransport({ baseUrl: harness.server.url, httpVersion: "1.1" }),
    ).runSSE({ requestId }, { headers: {}, timeoutMs: 20_000 })) {
      kinds.push(message.message.case ?? "");
      messages.push(message);
    }
    return { kinds, messages, error: undefined };
  } catch (error) {
    return { kinds, messages, error: ConnectError.from(error) };
  }
}
