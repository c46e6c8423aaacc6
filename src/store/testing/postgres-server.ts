/**
 * A real PostgreSQL for tests (docs in /work/shared real-components recipe, README "Tests"):
 * `CURSOR_BYOK_TEST_DATABASE_URL` when set; otherwise a throw-away cluster started here with
 * Debian's `initdb`/`pg_ctl` on a free loopback port (run as the `postgres` user when this
 * process is root, since `initdb` refuses root), stopped when the process exits; otherwise the
 * reason none is available, for the tests to skip with. Each store a test opens gets its own
 * schema, so tests never see each other's rows.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

export const TEST_DATABASE_VARIABLE = "CURSOR_BYOK_TEST_DATABASE_URL";

export interface TestPostgres {
  /** The server's URL (its default schema). */
  readonly url: string;
  /** A new, empty schema; the URL puts it first on the search path. */
  createSchema(): Promise<{ url: string; drop(): Promise<void> }>;
}

export type TestPostgresResult =
  | { readonly type: "ready"; readonly server: TestPostgres }
  | { readonly type: "unavailable"; readonly reason: string };

let started: Promise<TestPostgresResult> | null = null;

export interface TestPostgresOptions {
  /**
   * Keep PostgreSQL's durability settings (fsync, synchronous commit) on, for benchmarks that
   * compare with SQLite's `synchronous = FULL`. Tests turn them off: a throw-away cluster.
   */
  readonly durable?: boolean;
}

/** One server per process, started on first use (the first call's options apply). */
export function getTestPostgres(options: TestPostgresOptions = {}): Promise<TestPostgresResult> {
  started ??= start(options);
  return started;
}

async function start(options: TestPostgresOptions): Promise<TestPostgresResult> {
  const given = process.env[TEST_DATABASE_VARIABLE];
  if (given !== undefined && given !== "") return { type: "ready", server: serverAt(given) };
  const bin = findBinaries();
  if (bin === null) {
    return {
      type: "unavailable",
      reason:
        `no PostgreSQL: ${TEST_DATABASE_VARIABLE} is not set and no initdb/pg_ctl were found ` +
        "under /usr/lib/postgresql/*/bin (Debian: apt-get install postgresql)",
    };
  }
  try {
    return { type: "ready", server: serverAt(await startCluster(bin, options.durable === true)) };
  } catch (error) {
    return {
      type: "unavailable",
      reason: `a throw-away PostgreSQL cluster did not start: ${(error as Error).message}`,
    };
  }
}

function serverAt(url: string): TestPostgres {
  return {
    url,
    async createSchema() {
      const schema = `t_${randomBytes(6).toString("hex")}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`create schema ${schema}`);
      } finally {
        await client.end();
      }
      const separator = url.includes("?") ? "&" : "?";
      return {
        url: `${url}${separator}options=${encodeURIComponent(`-c search_path=${schema}`)}`,
        async drop() {
          const admin = new pg.Client({ connectionString: url });
          await admin.connect();
          try {
            await admin.query(`drop schema ${schema} cascade`);
          } finally {
            await admin.end();
          }
        },
      };
    },
  };
}

function findBinaries(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = join(root, version, "bin");
    if (existsSync(join(bin, "initdb")) && existsSync(join(bin, "pg_ctl"))) return bin;
  }
  return null;
}

/** The command prefix that runs a program as an unprivileged user when we are root. */
function asUnprivileged(): string[] {
  if (process.getuid?.() !== 0) return [];
  for (const user of ["postgres", "nobody"]) {
    if (spawnSync("id", ["-u", user]).status === 0) return ["runuser", "-u", user, "--"];
  }
  throw new Error("running as root and no unprivileged user (postgres, nobody) to run initdb as");
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address !== null
          ? resolve(address.port)
          : reject(new Error("no port")),
      );
    });
  });
}

async function startCluster(bin: string, durable: boolean): Promise<string> {
  const directory = mkdtempSync(join(tmpdir(), "cursor-byok-pg-"));
  // The unprivileged user writes the cluster and its socket here.
  chmodSync(directory, 0o777);
  const prefix = asUnprivileged();
  const run = (program: string, args: string[]): void => {
    const [command, ...rest] = [...prefix, join(bin, program), ...args];
    execFileSync(command as string, rest, { stdio: ["ignore", "ignore", "pipe"] });
  };
  const data = join(directory, "pg");
  run("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
  const stop = (): void => {
    const [command, ...rest] = [
      ...prefix,
      join(bin, "pg_ctl"),
      "-D",
      data,
      "stop",
      "-m",
      "immediate",
    ];
    spawnSync(command as string, rest, { stdio: "ignore" });
    rmSync(directory, { recursive: true, force: true });
  };
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      // fsync off for tests: a throw-away cluster; durability is PostgreSQL's, not under test.
      const speed = durable
        ? ""
        : " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
      run("pg_ctl", [
        "-D",
        data,
        "-w",
        "-l",
        join(directory, "log"),
        "-o",
        `-p ${port} -k ${directory} -c listen_addresses=127.0.0.1 -c max_connections=300${speed}`,
        "start",
      ]);
      process.once("exit", stop);
      // A test run stopped by a signal does not reach "exit": stop the cluster, then die of it.
      for (const signal of ["SIGINT", "SIGTERM"] as const) {
        process.once(signal, () => {
          stop();
          process.kill(process.pid, signal);
        });
      }
      return `postgres://postgres@127.0.0.1:${port}/postgres`;
    } catch (error) {
      lastError = error;
    }
  }
  stop();
  throw lastError instanceof Error ? lastError : new Error(String(lastError));
}
