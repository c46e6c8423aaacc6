/**
 * `cursor-byok config init`: writes the commented starter configuration. It never replaces an
 * existing file unless `--force` is given, and then keeps the old one as `<file>.bak`: losing a
 * hand-written model list to a re-run is the failure users of other tools complain about.
 * The file is created readable by its owner only, because it may come to hold keys.
 */
import { constants, copyFileSync, existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { toConfigLocation, toDefaultConfigPath, toStarterConfig } from "../config/index.ts";
import { toDefaultDatabasePath } from "../store/index.ts";
import { CONFIG_OPTION, HELP_OPTION, parseFlags, toStringFlag } from "./args.ts";
import type { Command } from "./command.ts";
import type { CliIO } from "./io.ts";
import { UsageError } from "./usage-error.ts";

const OPTIONS = { ...HELP_OPTION, ...CONFIG_OPTION, force: { type: "boolean" } } as const;

export const CONFIG_INIT_COMMAND: Command = {
  name: "config init",
  summary: "write a commented starter configuration file",
  help: (io) =>
    [
      "Usage: cursor-byok config init [--config <file>] [--force]",
      "",
      "Writes a commented starter configuration (server, data, log and model examples for",
      "OpenAI, Anthropic, Gemini, OpenRouter and a local OpenAI-compatible server).",
      "An existing file is never replaced without --force.",
      "",
      "Options:",
      `  --config <file>  where to write it (default ${toDefaultConfigPath(io)},`,
      "                   or CURSOR_BYOK_CONFIG)",
      "  --force          replace an existing file (the old one is kept as <file>.bak,",
      "                   or .bak.1, .bak.2, … when earlier backups exist)",
      "  -h, --help       show this help",
      "",
    ].join("\n"),
  async run(args, io) {
    const { values } = parseFlags(args, OPTIONS);
    const { path: file } = toConfigLocation(toStringFlag(values, "config"), io);
    const text = toStarterConfig({
      dataDirectory: path.dirname(toDefaultDatabasePath(io)),
    });
    try {
      return write(file, text, values.force === true, io);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "error";
      io.stderr.write(`cursor-byok: cannot write ${file} (${code}): check the path.\n`);
      return 1;
    }
  },
};

function write(file: string, text: string, force: boolean, io: CliIO): number {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  if (force) {
    const backup = toFreeBackupPath(file);
    const replaced = existsSync(file);
    if (replaced) copyFileSync(file, backup, constants.COPYFILE_EXCL);
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, text, { mode: 0o600 });
    renameSync(temporary, file);
    io.stdout.write(
      `Wrote ${file}${replaced ? ` (the previous file is kept as ${backup})` : ""}.\n`,
    );
  } else {
    try {
      writeFileSync(file, text, { flag: "wx", mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      io.stderr.write(
        `cursor-byok: ${file} already exists; not overwriting it.\n` +
          "Edit it, or run `cursor-byok config init --force` to replace it " +
          "(the current file is then kept as <file>.bak).\n",
      );
      return 1;
    }
    io.stdout.write(`Wrote ${file}.\n`);
  }
  io.stdout.write(toNextSteps());
  return 0;
}

/** `<file>.bak`, or `<file>.bak.<n>` when earlier backups exist: a backup is never overwritten. */
function toFreeBackupPath(file: string): string {
  let candidate = `${file}.bak`;
  for (let n = 1; existsSync(candidate); n += 1) candidate = `${file}.bak.${n}`;
  return candidate;
}

/** `cursor-byok config` alone: the list of its subcommands. */
export const CONFIG_COMMAND: Command = {
  name: "config",
  summary: "manage the configuration file (config init)",
  help: (io) =>
    [
      "Usage: cursor-byok config <subcommand>",
      "",
      "Subcommands:",
      `  init  ${CONFIG_INIT_COMMAND.summary}`,
      "",
      `The configuration file: ${toDefaultConfigPath(io)}`,
      "(or --config <file>, or the CURSOR_BYOK_CONFIG environment variable).",
      "",
    ].join("\n"),
  async run(args, io) {
    const [subcommand, ...rest] = args;
    if (subcommand === "init") return CONFIG_INIT_COMMAND.run(rest, io);
    throw new UsageError(
      subcommand === undefined
        ? "config needs a subcommand: init"
        : `unknown config subcommand "${subcommand}" (expected init)`,
    );
  },
};

function toNextSteps(): string {
  return [
    "",
    "Next:",
    "  1. Add your models to it, or just set a key: export ANTHROPIC_API_KEY=…",
    "  2. Check everything:  cursor-byok doctor",
    "  3. Start the server:  cursor-byok serve   (or npm start)",
    "",
  ].join("\n");
}
