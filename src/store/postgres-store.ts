/**
 * The PostgreSQL store, for a team running several instances on one database (docs/team.md):
 * the store logic of create-store.ts over a pool of connections. Each store operation is one
 * transaction on one pooled connection; the compare-and-swap on a conversation's version is one
 * `update … where version = $n` statement, so of two instances committing on the same version
 * exactly one wins, whatever the isolation level (the loser's update waits for the winner's
 * commit, then matches no row). A transaction that loses a race on a unique key, a serialization
 * failure or a deadlock is run again from the start, which turns it into the result a store
 * with one writer gives (`duplicate`, `conflict`, or the record as the winner saved it).
 *
 * Every statement has a time-out (`statement_timeout`), and so has an open transaction left
 * idle; the URL's password never appears in a location, an error or a log line.
 */
import pg from "pg";
import { createStore, type StoreOptions } from "./create-store.ts";
import { StoreError, type StoreErrorCode } from "./errors.ts";
import { migratePostgres, POSTGRES_SCHEMA_VERSION, readSchemaVersion } from "./postgres-schema.ts";
import { createPostgresTables } from "./postgres-tables.ts";
import type { Backend, Tables } from "./tables.ts";
import type { Store } from "./types.ts";

export interface PostgresStoreOptions extends StoreOptions {
  /** `postgres://user:password@host:port/database` (the password is never shown). */
  readonly url: string;
  /** Connections in the pool. Default 10. */
  readonly poolSize?: number;
  /** The longest one statement may run before PostgreSQL cancels it. Default 15 s. */
  readonly statementTimeoutMs?: number;
  /** How long to wait for a connection (new or from the pool). Default 10 s. */
  readonly connectTimeoutMs?: number;
  /**
   * Apply missing migrations at open (default). `false` refuses a database that is not at this
   * build's schema version (`older_schema`), for commands that must not change it.
   */
  readonly migrate?: boolean;
}

/** Transactions run again at most this many times after a retryable failure. */
const RETRIES = 5;
/** unique_violation, serialization_failure, deadlock_detected. */
const RETRYABLE = new Set(["23505", "40001", "40P01"]);

/** The URL without its password: what errors and logs name. */
export function toPostgresLocation(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = "";
    parsed.search = "";
    return parsed.toString();
  } catch {
    return "the PostgreSQL database (unreadable URL)";
  }
}

/** Opens a pool, checks the database is ours, applies migrations; throws `StoreError`s. */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const pool = createPool(options);
  const location = toPostgresLocation(options.url);
  try {
    await prepareSchema(pool, location, options.migrate ?? true);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw fromPostgresError(error, location);
  }
  return createStore(createPostgresBackend(pool, location), options);
}

/** `cursor-byok db migrate`: applies missing migrations; returns the versions applied. */
export async function migratePostgresDatabase(
  options: Pick<PostgresStoreOptions, "url" | "connectTimeoutMs" | "statementTimeoutMs">,
): Promise<{ applied: number[]; version: number; location: string }> {
  const pool = createPool({ ...options, poolSize: 1 });
  const location = toPostgresLocation(options.url);
  try {
    const applied = await prepareSchema(pool, location, true);
    return { applied, version: POSTGRES_SCHEMA_VERSION, location };
  } catch (error) {
    throw fromPostgresError(error, location);
  } finally {
    await pool.end().catch(() => undefined);
  }
}

export function createPool(
  options: Pick<
    PostgresStoreOptions,
    "url" | "poolSize" | "statementTimeoutMs" | "connectTimeoutMs"
  >,
): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    statement_timeout: options.statementTimeoutMs ?? 15_000,
    idle_in_transaction_session_timeout: (options.statementTimeoutMs ?? 15_000) * 2,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: "cursor-byok",
  });
  // An idle connection that breaks (server restart) is dropped by the pool; the next query
  // opens a new one. Without a listener the error would end the process.
  pool.on("error", () => undefined);
  return pool;
}

async function prepareSchema(pool: pg.Pool, location: string, migrate: boolean): Promise<number[]> {
  const client = await pool.connect();
  try {
    const check = await readSchemaVersion(client);
    if (check.type === "foreign") {
      throw new StoreError(
        "foreign_database",
        location,
        `${location} holds tables of another program (a "conversations" table without ` +
          "cursor-byok's schema list). Give cursor-byok its own database or schema; nothing " +
          "was changed.",
      );
    }
    if (check.type === "newer") {
      throw new StoreError(
        "newer_schema",
        location,
        `${location} was upgraded by a newer cursor-byok (schema ${check.version}; this build ` +
          `knows ${POSTGRES_SCHEMA_VERSION}). Upgrade cursor-byok; nothing was changed.`,
      );
    }
    if (!migrate) {
      if (check.version < POSTGRES_SCHEMA_VERSION) {
        throw new StoreError(
          "older_schema",
          location,
          `${location} is at schema ${check.version}; run \`cursor-byok db migrate\` (or start ` +
            "the server, which migrates) first.",
        );
      }
      return [];
    }
    return await migratePostgres(client);
  } finally {
    client.release();
  }
}

export function createPostgresBackend(pool: pg.Pool, location: string): Backend {
  const transaction = async <T>(
    begin: string,
    work: (tables: Tables) => Promise<T>,
    relaxed = false,
  ): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw fromPostgresError(error, location);
      }
      let broken: Error | undefined;
      try {
        await client.query(begin);
        // WriteOptions `relaxed` (tables.ts): this transaction only.
        if (relaxed) await client.query("set local synchronous_commit = off");
        const result = await work(createPostgresTables(client));
        await client.query("commit");
        return result;
      } catch (error) {
        try {
          await client.query("rollback");
        } catch (rollbackError) {
          broken = rollbackError instanceof Error ? rollbackError : new Error("rollback failed");
        }
        if (attempt < RETRIES && RETRYABLE.has(sqlState(error) ?? "")) continue;
        throw fromPostgresError(error, location);
      } finally {
        client.release(broken);
      }
    }
  };
  /** ReadOptions `single` (tables.ts): one statement, no transaction around it. */
  const autocommit = async <T>(work: (tables: Tables) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw fromPostgresError(error, location);
    }
    try {
      return await work(createPostgresTables(client));
    } catch (error) {
      throw fromPostgresError(error, location);
    } finally {
      client.release();
    }
  };
  return {
    location,
    write: (work, options) => transaction("begin", work, options?.relaxed === true),
    read: (work, options) =>
      options?.single === true
        ? autocommit(work)
        : transaction("begin isolation level repeatable read read only", work),
    close: () => pool.end(),
  };
}

function sqlState(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : null;
}

const KEPT = "Everything committed before is kept; the failed change was not written.";

/** A driver or server failure as a `StoreError` naming the database; anything else unchanged. */
export function fromPostgresError(error: unknown, location: string): unknown {
  if (error instanceof StoreError) return error;
  if (!(error instanceof Error)) return error;
  const state = sqlState(error);
  const network = (error as { code?: unknown }).code;
  const [code, advice] = toCodeAndAdvice(
    state,
    typeof network === "string" ? network : "",
    location,
  );
  if (code === null) return error;
  // The server's message names tables and values, never the connection's password.
  return new StoreError(code, location, `${advice} (PostgreSQL: ${error.message})`, error);
}

function toCodeAndAdvice(
  state: string | null,
  network: string,
  location: string,
): [StoreErrorCode | null, string] {
  if (state === null) {
    if (/^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|EHOSTUNREACH)$/.test(network)) {
      return [
        "cannot_open",
        `Cannot reach ${location}. Check that PostgreSQL runs there and the URL is right.`,
      ];
    }
    return [null, ""];
  }
  if (state.startsWith("08") || state === "57P01" || state === "57P03") {
    return ["cannot_open", `The connection to ${location} failed; retry when it is back. ${KEPT}`];
  }
  if (state === "28P01" || state === "28000" || state === "3D000" || state === "42501") {
    return [
      "cannot_open",
      `${location} refused the connection (user, password, database or privileges). Check the URL.`,
    ];
  }
  if (
    state === "57014" ||
    state === "55P03" ||
    state === "40001" ||
    state === "40P01" ||
    state === "23505"
  ) {
    return [
      "busy",
      `${location} did not finish in time or stayed contended (statement time-out, lock or ` +
        `retried conflicts). Retry. ${KEPT}`,
    ];
  }
  if (state === "53100") {
    return ["disk_full", `${location} is out of disk space. Free some, then retry. ${KEPT}`];
  }
  if (state === "25006") {
    return ["read_only", `${location} is read-only (a standby?). Point the URL at the primary.`];
  }
  if (state === "22021" || state === "22P05") {
    return [
      "invalid_argument",
      `Text with a NUL character cannot be stored in ${location}; nothing was written.`,
    ];
  }
  return ["database_error", `The database ${location} failed. ${KEPT}`];
}
