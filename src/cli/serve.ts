/**
 * `cursor-byok serve`: the server on the SQLite store with the configured models (the demo model
 * when none is configured), until SIGINT/SIGTERM.
 */
import { homedir } from "node:os";
import type { Logger } from "pino";
import { createLLM, type ModelConfig } from "../llm/index.ts";
import { openSqliteStore, toDefaultDatabasePath } from "../store/index.ts";
import { DEFAULT_SERVER_OPTIONS, type ServerOptions, startServer } from "../transport/server.ts";

export interface ServeOptions {
  readonly models: readonly ModelConfig[];
  readonly databasePath?: string;
  readonly server: Partial<ServerOptions>;
  readonly log: Logger;
}

export async function runServe(options: ServeOptions): Promise<void> {
  const { log } = options;
  const databasePath =
    options.databasePath ??
    toDefaultDatabasePath({ env: process.env, platform: process.platform, homeDir: homedir() });
  const store = openSqliteStore({ path: databasePath });
  const llm = createLLM({ models: options.models });
  const server = await startServer(
    { store, llm, log },
    { ...DEFAULT_SERVER_OPTIONS, ...options.server },
  );
  const models = llm.listModels();
  log.info(
    { url: server.url, database: databasePath, models: models.map((model) => model.name) },
    "cursor-byok is listening",
  );
  process.stdout.write(
    [
      "",
      `cursor-byok is serving on ${server.url}`,
      `  models: ${models.map((model) => (model.demo ? `${model.name} (no provider configured)` : model.name)).join(", ")}`,
      `  data:   ${databasePath}`,
      "",
      "Point the Cursor CLI at it:",
      `  cursor-agent --endpoint ${server.url} --agent-endpoint ${server.url}`,
      "",
    ].join("\n"),
  );

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info({ signal }, "shutting down");
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  await server.close();
  await store.close();
  log.info({}, "stopped");
}
