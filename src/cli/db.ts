/**
 * `cursor-byok db migrate`: applies the schema migrations this build knows to the configured
 * database and says which ran. The server does the same when it starts; the command lets a team
 * upgrade its PostgreSQL database once, before rolling new instances out (docs/team.md).
 *
 * `cursor-byok db compact`: gives the SQLite file's free pages back to the file system (VACUUM),
 * with the server stopped; for PostgreSQL, says that (auto)vacuum does that job.
 */
import { existsSync } from "node:fs";
import { toDefaultConfigPath } from "../config/index.ts";
import {
  compactSqliteDatabase,
  lockDatabase,
  migratePostgresDatabase,
  openSqliteStore,
  POSTGRES_SCHEMA_VERSION,
  SCHEMA_VERSION,
} from "../store/index.ts";
import { CONFIG_OPTION, HELP_OPTION, parseFlags, toOverrides, toStringFlag } from "./args.ts";
import type { Command } from "./command.ts";
import { loadSettings } from "./settings.ts";

const OPTIONS = {
  ...HELP_OPTION,
  ...CONFIG_OPTION,
  "data-dir": { type: "string" },
} as const;

export const DB_MIGRATE_COMMAND: Command = {
  name: "db migrate",
  summary: "apply the database schema migrations (PostgreSQL or the SQLite file)",
  help: (io) =>
    [
      "Usage: cursor-byok db migrate [options]",
      "",
      "Applies the schema migrations this version knows to the configured database:",
      "PostgreSQL when data.postgres.url (or DATABASE_URL) is set, else the SQLite file.",
      "Safe to run while servers use the database and from several machines at once; the",
      "server also migrates when it starts.",
      "",
      "Options:",
      "  --data-dir <dir>   where the SQLite database lives (data.directory)",
      `  --config <file>    the configuration file (default ${toDefaultConfigPath(io)},`,
      "                     or CURSOR_BYOK_CONFIG)",
      "  -h, --help         show this help",
      "",
    ].join("\n"),
  async run(args, io) {
    const { values } = parseFlags(args, OPTIONS);
    const config = loadSettings(toStringFlag(values, "config"), toOverrides(values), io);
    if (config.postgres !== undefined) {
      const result = await migratePostgresDatabase({ url: config.postgres.url.reveal() });
      io.stdout.write(
        result.applied.length === 0
          ? `${result.location} is at schema ${result.version}; nothing to do.\n`
          : `${result.location}: applied migration${result.applied.length === 1 ? "" : "s"} ` +
              `${result.applied.join(", ")}; now at schema ${POSTGRES_SCHEMA_VERSION}.\n`,
      );
      return 0;
    }
    // Opening the SQLite file applies its migrations (and creates it when missing).
    const store = openSqliteStore({ path: config.databasePath });
    await store.close();
    io.stdout.write(`${config.databasePath} is at schema ${SCHEMA_VERSION}.\n`);
    return 0;
  },
};

export const DB_COMPACT_COMMAND: Command = {
  name: "db compact",
  summary: "give the SQLite file's free space back to the disk (with the server stopped)",
  help: (io) =>
    [
      "Usage: cursor-byok db compact [options]",
      "",
      "Rebuilds the SQLite database file without its free pages (SQLite's VACUUM), after",
      "applying this version's migrations. SQLite reuses freed space but never shrinks the",
      "file by itself; run this once after an upgrade that released much data (schema 7",
      "keeps the client's saved checkpoint only for each conversation's newest stream).",
      "Needs the file to itself: refused while a server uses it. Needs free disk space up",
      "to the file's size while it runs. PostgreSQL: autovacuum reuses the space; nothing",
      "to do here.",
      "",
      "Options:",
      "  --data-dir <dir>   where the SQLite database lives (data.directory)",
      `  --config <file>    the configuration file (default ${toDefaultConfigPath(io)},`,
      "                     or CURSOR_BYOK_CONFIG)",
      "  -h, --help         show this help",
      "",
    ].join("\n"),
  async run(args, io) {
    const { values } = parseFlags(args, OPTIONS);
    const config = loadSettings(toStringFlag(values, "config"), toOverrides(values), io);
    if (config.postgres !== undefined) {
      io.stdout.write(
        "The database is PostgreSQL: its autovacuum makes freed space reusable; to give it " +
          "back to the disk, run VACUUM FULL on request_streams with the servers stopped.\n",
      );
      return 0;
    }
    if (!existsSync(config.databasePath)) {
      io.stdout.write(`${config.databasePath} does not exist yet; nothing to do.\n`);
      return 0;
    }
    const lock = lockDatabase(config.databasePath);
    try {
      // The migrations first: they may release data (and the file must be at this schema).
      const store = openSqliteStore({ path: config.databasePath });
      await store.close();
      const { before, after, freePages } = compactSqliteDatabase(config.databasePath);
      io.stdout.write(
        `${config.databasePath}: ${toMB(before)} → ${toMB(after)} ` +
          `(${freePages} free page${freePages === 1 ? "" : "s"} given back).\n`,
      );
      return 0;
    } finally {
      lock.release();
    }
  },
};

const toMB = (bytes: number) => `${(bytes / 1_000_000).toFixed(2)} MB`;
