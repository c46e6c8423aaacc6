/**
 * The `cursor-byok` command line: picks the subcommand, shows help, and turns the errors users
 * can fix (a bad flag, a bad configuration, an unusable database) into one clear message and an
 * exit code: 0 success, 1 failure, 2 bad command line.
 */
import { isConfigFileError, toDefaultConfigPath } from "../config/index.ts";
import { isStoreError } from "../store/index.ts";
import { AGENT_COMMAND } from "./agent.ts";
import type { Command } from "./command.ts";
import { CONFIG_COMMAND, CONFIG_INIT_COMMAND } from "./config-init.ts";
import { DB_COMPACT_COMMAND, DB_MIGRATE_COMMAND } from "./db.ts";
import { DOCTOR_COMMAND } from "./doctor.ts";
import { IDE_COMMAND } from "./ide.ts";
import type { CliIO } from "./io.ts";
import { MODELS_COMMAND } from "./models.ts";
import { SERVE_COMMAND } from "./serve.ts";
import { USAGE_COMMAND } from "./usage.ts";
import { UsageError } from "./usage-error.ts";
import { USERS_COMMAND } from "./users.ts";

/** Every command, in the order the overview lists them. */
export const COMMANDS: readonly Command[] = [
  SERVE_COMMAND,
  MODELS_COMMAND,
  CONFIG_INIT_COMMAND,
  DOCTOR_COMMAND,
  IDE_COMMAND,
  AGENT_COMMAND,
  USAGE_COMMAND,
  DB_MIGRATE_COMMAND,
  DB_COMPACT_COMMAND,
  USERS_COMMAND,
];

export interface CliInfo {
  readonly version: string;
}

export async function runCli(args: readonly string[], io: CliIO, info: CliInfo): Promise<number> {
  const [first, ...rest] = args;
  if (first === "--version" || first === "-v") {
    io.stdout.write(`cursor-byok ${info.version}\n`);
    return 0;
  }
  if (first === "--help" || first === "-h") {
    io.stdout.write(toOverview(io));
    return 0;
  }
  if (first === "help") return runHelp(rest, io);

  // No command, or flags first: `cursor-byok --port 9000` serves.
  const { command, commandArgs } =
    first === undefined || first.startsWith("-")
      ? { command: SERVE_COMMAND, commandArgs: args }
      : findCommand(first, rest);
  if (command === undefined) {
    io.stderr.write(
      `cursor-byok: unknown command "${first}"\nRun \`cursor-byok --help\` for the commands.\n`,
    );
    return 2;
  }
  if (wantsHelp(commandArgs)) {
    io.stdout.write(command.help(io));
    return 0;
  }
  try {
    return await command.run(commandArgs, io);
  } catch (error) {
    return reportError(error, command, io);
  }
}

function findCommand(
  first: string,
  rest: readonly string[],
): { command: Command | undefined; commandArgs: readonly string[] } {
  if (first === "config") {
    if (rest[0] === "init") return { command: CONFIG_INIT_COMMAND, commandArgs: rest.slice(1) };
    return { command: CONFIG_COMMAND, commandArgs: rest };
  }
  if (first === "db") {
    const command =
      rest[0] === "migrate"
        ? DB_MIGRATE_COMMAND
        : rest[0] === "compact"
          ? DB_COMPACT_COMMAND
          : undefined;
    return { command, commandArgs: command === undefined ? rest : rest.slice(1) };
  }
  return { command: COMMANDS.find((command) => command.name === first), commandArgs: rest };
}

/** `-h` / `--help` before any `--` (after it, arguments belong to another program). */
function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).some((arg) => arg === "-h" || arg === "--help");
}

function runHelp(args: readonly string[], io: CliIO): number {
  if (args.length === 0) {
    io.stdout.write(toOverview(io));
    return 0;
  }
  const [first = "", ...rest] = args;
  const { command } = findCommand(first, rest);
  if (command === undefined) {
    io.stderr.write(`cursor-byok: unknown command "${args.join(" ")}"\n`);
    return 2;
  }
  io.stdout.write(command.help(io));
  return 0;
}

function toOverview(io: CliIO): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return [
    "cursor-byok: run Cursor's agent (cursor-agent, the IDE) on your own LLM keys.",
    "",
    "Usage: cursor-byok [command] [options]",
    "",
    "Commands:",
    ...COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    `  ${"help".padEnd(width)}  show a command's help: cursor-byok help <command>`,
    "",
    "Run `cursor-byok <command> --help` for its options. Without a command, cursor-byok serves.",
    `Configuration: ${toDefaultConfigPath(io)} (or --config <file>, or CURSOR_BYOK_CONFIG);`,
    "OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY or OPENROUTER_API_KEY alone also work.",
    "",
  ].join("\n");
}

function reportError(error: unknown, command: Command, io: CliIO): number {
  if (error instanceof UsageError) {
    io.stderr.write(
      `cursor-byok ${command.name}: ${error.message}\nRun \`cursor-byok ${command.name} --help\` for usage.\n`,
    );
    return 2;
  }
  if (isConfigFileError(error)) {
    io.stderr.write(
      `cursor-byok: configuration error:\n  ${error.message}\n` +
        "Fix it, then check the whole setup with `cursor-byok doctor`.\n",
    );
    return 1;
  }
  if (isStoreError(error)) {
    io.stderr.write(`cursor-byok: database error: ${error.message}\n`);
    return 1;
  }
  throw error;
}
