/**
 * Test support for the dashboard: the real server on a SQLite file, a model with prices (so cost
 * is not zero), an access token, and an OpenAI-compatible provider on 127.0.0.1 whose replies can
 * be held at a gate, so a test can look at a turn while it runs. Turns are driven by the
 * protocol-faithful Cursor test client. Nothing leaves 127.0.0.1.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLLM, createModelConfigs } from "../../llm/index.ts";
import { type ScriptedReply, toChatCompletionSse } from "../../llm/testing/chat-completions-sse.ts";
import { splitSseEvents } from "../../llm/testing/fake-provider.ts";
import { createRunner } from "../../runner/runner.ts";
import { openSqliteStore, type Store } from "../../store/index.ts";
import { type Log, logRunnerErrors } from "../log.ts";
import { DEFAULT_SERVER_OPTIONS, type LocalServer, startServer } from "../server.ts";
import { type CursorClient, createCursorClient } from "../testing/index.ts";
import type { SetupInfo } from "./types.ts";

export const MODEL = "scripted";
export const ACCESS_TOKEN = "dashboard-test-token-0123456789abcdef";
const API_KEY = "sk-dashboard-not-a-real-key-1234567890";

/** Dollars per million tokens. */
export const PRICES = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };

export interface HeldReply {
  readonly reply: ScriptedReply;
  /** Events written before waiting for `gate`. */
  readonly before: number;
  readonly gate: Promise<void>;
}

export interface DashboardFixture {
  readonly server: LocalServer;
  readonly store: Store;
  readonly workspace: string;
  /** Requests the provider received. */
  readonly requests: number;
  reply(...replies: (ScriptedReply | HeldReply)[]): void;
  /** Resolves once the provider has received `count` requests in all. */
  received(count: number): Promise<void>;
  client(): CursorClient;
  close(): Promise<void>;
}

export async function startDashboardFixture(
  options: { readonly accessToken?: string | null } = {},
): Promise<DashboardFixture> {
  const directory = mkdtempSync(join(tmpdir(), "cursor-byok-dashboard-"));
  const workspace = join(directory, "workspace");
  mkdirSync(workspace);
  const queue: (ScriptedReply | HeldReply)[] = [];
  let requests = 0;
  const waiters: { readonly count: number; readonly resolve: () => void }[] = [];
  const provider: HttpServer = createServer((request, response) => {
    request.resume();
    request.on("end", async () => {
      requests += 1;
      for (const waiter of waiters.filter((waiter) => waiter.count <= requests)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      const next = queue.shift();
      if (next === undefined) {
        response.writeHead(500, { "content-type": "application/json" });
        response.end('{"error":{"message":"no reply queued"}}');
        return;
      }
      const held = "gate" in next ? next : null;
      const events = splitSseEvents(toChatCompletionSse(held?.reply ?? (next as ScriptedReply)));
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.flushHeaders();
      for (const [index, event] of events.entries()) {
        if (held !== null && index === held.before) await held.gate;
        response.write(event);
      }
      response.end();
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  const providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;

  const store = openSqliteStore({ path: join(directory, "store.db") });
  const quiet = () => {};
  const log: Log = { debug: quiet, info: quiet, warn: quiet, error: quiet };
  const models = createModelConfigs([
    {
      name: MODEL,
      api: "openai-compatible",
      model: "scripted-model",
      provider: "scripted-provider",
      baseUrl: providerUrl,
      apiKey: API_KEY,
      prices: PRICES,
    },
  ]);
  const setup: SetupInfo = {
    models: models.map((model) => ({
      name: model.name,
      provider: model.provider,
      api: model.api,
      upstreamId: model.upstreamId,
      baseUrl: model.baseUrl,
      contextWindow: model.contextWindow,
      maxOutput: model.maxOutput,
    })),
    checks: [{ status: "ok", name: "config", detail: "test configuration" }],
    ide: "not set up",
    database: store.location,
  };
  const accessToken = options.accessToken === undefined ? ACCESS_TOKEN : options.accessToken;
  const llm = createLLM({ models, retry: { sleep: async () => {}, maxAttempts: 1 } });
  const server = await startServer(
    {
      store,
      llm,
      runner: createRunner({ store, llm, onError: logRunnerErrors(log) }),
      log,
      readSetup: async () => setup,
    },
    {
      ...DEFAULT_SERVER_OPTIONS,
      port: 0,
      ...(accessToken === null ? {} : { accessToken }),
    },
  );
  const clients: CursorClient[] = [];
  return {
    server,
    store,
    workspace,
    get requests() {
      return requests;
    },
    reply: (...replies) => queue.push(...replies),
    received: (count) =>
      count <= requests
        ? Promise.resolve()
        : new Promise((resolve) => waiters.push({ count, resolve })),
    client() {
      const client = createCursorClient({
        baseUrl: server.url,
        httpVersion: "1.1",
        workspace,
        timeoutMs: 30_000,
        ...(accessToken === null ? {} : { headers: { authorization: `Bearer ${accessToken}` } }),
      });
      clients.push(client);
      return client;
    },
    async close() {
      for (const client of clients) await client.close();
      await server.close();
      await store.close();
      provider.closeAllConnections();
      await new Promise<void>((resolve) => provider.close(() => resolve()));
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
