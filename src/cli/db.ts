/**
 * `cursor-byok db migrate`: applies the schema migrations this build knows to the configured
 * database and says which ran. The server does the same when it starts; the command lets a team
 * upgrade its PostgreSQL database once, before rolling new instances out (docs/team.md).
 */
import { toDefaultConfigPath } from "../config/index.ts";
import {
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
