/**
 * The server in a process of its own, for tests that kill it: started with a JSON argument
 * `{ providerUrl, apiKey, dbPath, port }`, it prints `LISTENING <url>` once it serves and runs
 * until it is killed (SIGTERM shuts it down cleanly).
 */
import { createLLM, createModelConfigs } from "../../llm/index.ts";
import { openSqliteStore } from "../../store/index.ts";
import { silentLog } from "../log.ts";
import { DEFAULT_SERVER_OPTIONS, startServer } from "../server.ts";

interface Settings {
  readonly providerUrl: string;
  readonly apiKey: string;
  readonly model: string;
  readonly dbPath: string;
  readonly port: number;
  /** Overrides the heartbeat interval (benchmarks). */
  readonly heartbeatMs?: number;
  /** Overrides the RunSSE content type (benchmarks use a stock Connect client). */
  readonly runSseContentType?: "event-stream" | "connect";
}

const settings = JSON.parse(process.argv[2] ?? "{}") as Settings;
const store = openSqliteStore({ path: settings.dbPath });
const llm = createLLM({
  models: createModelConfigs([
    {
      name: settings.model,
      api: "openai-compatible",
      model: "scripted-model",
      baseUrl: settings.providerUrl,
      apiKey: settings.apiKey,
    },
  ]),
  retry: { sleep: async () => {}, maxAttempts: 3 },
});
const server = await startServer(
  { store, llm, log: silentLog },
  {
    ...DEFAULT_SERVER_OPTIONS,
    port: settings.port,
    runSseContentType: settings.runSseContentType ?? DEFAULT_SERVER_OPTIONS.runSseContentType,
    stream: {
      ...DEFAULT_SERVER_OPTIONS.stream,
      heartbeatMs: settings.heartbeatMs ?? DEFAULT_SERVER_OPTIONS.stream.heartbeatMs,
    },
  },
);
process.stdout.write(`LISTENING ${server.url}\n`);
process.once("SIGTERM", () => {
  void server.close().then(() => store.close());
});
