/**
 * The store a command uses: PostgreSQL when `data.postgres.url` (or `DATABASE_URL`) is set (the
 * team store; several instances share it, so there is no single-process lock), else the SQLite
 * file, held by one server process at a time (`lockDatabase`).
 */
import { existsSync } from "node:fs";
import type { Config } from "../config/index.ts";
import {
  lockDatabase,
  openPostgresStore,
  openSqliteStore,
  type Store,
  toPostgresLocation,
} from "../store/index.ts";

export interface OpenedStore {
  readonly store: Store;
  /** The file path, or the URL without its password. */
  readonly location: string;
  readonly kind: "sqlite" | "postgres";
  /** Closes the store and releases the file lock. */
  close(): Promise<void>;
}

/**
 * Opens (migrating if needed) the configured store for the server. `onWarning` hears of a SQLite
 * WAL checkpoint worker that failed or fell behind (the server's store checkpoints in a worker so
 * that no commit blocks the event loop with a checkpoint; src/store/wal-checkpointer.ts).
 */
export async function openServerStore(
  config: Config,
  onWarning?: (message: string) => void,
): Promise<OpenedStore> {
  if (config.postgres !== undefined) {
    const store = await openPostgresStore({
      url: config.postgres.url.reveal(),
      ...(config.postgres.poolSize === undefined ? {} : { poolSize: config.postgres.poolSize }),
      ...(config.postgres.statementTimeoutMs === undefined
        ? {}
        : { statementTimeoutMs: config.postgres.statementTimeoutMs }),
    });
    return {
      store,
      location: toPostgresLocation(config.postgres.url.reveal()),
      kind: "postgres",
      close: () => store.close(),
    };
  }
  const lock = lockDatabase(config.databasePath);
  let store: Store;
  try {
    store = openSqliteStore({
      path: config.databasePath,
      backgroundCheckpoints: onWarning === undefined ? true : { onWarning },
    });
  } catch (error) {
    lock.release();
    throw error;
  }
  return {
    store,
    location: config.databasePath,
    kind: "sqlite",
    async close() {
      await store.close();
      lock.release();
    },
  };
}

/**
 * Opens the configured store for reading figures while a server may use it: nothing is created
 * or upgraded. Null when the SQLite file does not exist yet.
 */
export async function openReadingStore(config: Config): Promise<OpenedStore | null> {
  if (config.postgres !== undefined) {
    const store = await openPostgresStore({
      url: config.postgres.url.reveal(),
      poolSize: 1,
      migrate: false,
    });
    return {
      store,
      location: toPostgresLocation(config.postgres.url.reveal()),
      kind: "postgres",
      close: () => store.close(),
    };
  }
  if (!existsSync(config.databasePath)) return null;
  const store = openSqliteStore({ path: config.databasePath, readOnly: true });
  return { store, location: config.databasePath, kind: "sqlite", close: () => store.close() };
}
