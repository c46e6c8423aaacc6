/**
 * `cursor-byok doctor`: checks the setup and says, for each check, `ok`, `FAIL` (with how to fix
 * it) or `skip`. Exit code 0 when nothing failed, 1 otherwise. Results are printed as they come,
 * because the live and end-to-end checks take seconds.
 */
import {
  type Config,
  isConfigFileError,
  toConnectHost,
  toDefaultConfigPath,
} from "../config/index.ts";
import { runCommand } from "../ide/trust.ts";
import {
  CONFIG_OPTION,
  HELP_OPTION,
  parseFlags,
  SERVER_OPTIONS,
  toOverrides,
  toStringFlag,
} from "./args.ts";
import type { Command } from "./command.ts";
import {
  type CheckResult,
  checkAccess,
  checkConfigLoaded,
  checkDatabase,
  checkKeys,
  checkPort,
} from "./doctor-checks.ts";
import { checkEndToEnd } from "./doctor-e2e.ts";
import { checkIde } from "./doctor-ide.ts";
import { checkProvidersLive } from "./doctor-live.ts";
import { checkTeam } from "./doctor-team.ts";
import { checkSearchLive, checkWeb } from "./doctor-web.ts";
import type { CliIO } from "./io.ts";
import { loadSettings } from "./settings.ts";
import { UsageError } from "./usage-error.ts";

const OPTIONS = {
  ...HELP_OPTION,
  ...CONFIG_OPTION,
  ...SERVER_OPTIONS,
  live: { type: "boolean" },
  e2e: { type: "boolean" },
  url: { type: "string" },
  timeout: { type: "string" },
} as const;

const DEFAULT_TIMEOUT_S = 120;

export const DOCTOR_COMMAND: Command = {
  name: "doctor",
  summary: "check the configuration, keys, port and database (--live, --e2e: more)",
  help: (io) =>
    [
      "Usage: cursor-byok doctor [options]",
      "",
      "Checks, each with ok / FAIL / skip and how to fix a failure:",
      "  config    the configuration file parses and validates",
      "  key       each model's key variable is set (keys are never shown)",
      "  access    the server listens on loopback, or has an access token",
      "  web       web_search's provider and key; what web_fetch may reach",
      "  live      each provider answers one minimal request (only with --live; costs a few tokens)",
      "            and the search provider answers one search (costs one search)",
      "  port      the port is free (or cursor-byok is already running on it)",
      "  database  the database opens and is writable",
      "  ide       with IDE mode set up: the CA, its trust, Cursor's settings, a request through",
      "            the proxy that our server answers, and when Cursor last reached it",
      "  e2e       one complete agent turn against the running server, through RunSSE +",
      "            BidiAppend, reading a file in a temporary directory (only with --e2e)",
      "Exit code 0 when no check failed, 1 otherwise.",
      "",
      "Options:",
      "  --live              send one small real request to each provider",
      "  --e2e               run one agent turn against the running server (start it first)",
      "  --url <url>         the server --e2e talks to (default http://<host>:<port> from the config)",
      `  --timeout <seconds> limit for each live request and the e2e turn (default ${DEFAULT_TIMEOUT_S})`,
      "  --host <address>    check this address instead of server.host",
      "  --port <number>     check this port instead of server.port",
      "  --data-dir <dir>    check this data directory instead of data.directory",
      `  --config <file>     the configuration file (default ${toDefaultConfigPath(io)},`,
      "                      or CURSOR_BYOK_CONFIG)",
      "  -h, --help          show this help",
      "",
    ].join("\n"),
  async run(args, io) {
    const { values } = parseFlags(args, OPTIONS);
    const overrides = toOverrides(values);
    const timeoutMs = toTimeoutMs(toStringFlag(values, "timeout"));
    const url = toStringFlag(values, "url");
    if (url !== undefined && !/^https?:\/\/[^/]+\/?$/.test(url)) {
      throw new UsageError("--url must be a server address such as http://127.0.0.1:8765");
    }

    const results: CheckResult[] = [];
    const report = (result: CheckResult) => {
      results.push(result);
      io.stdout.write(toResultText(result));
    };
    io.stdout.write("cursor-byok doctor\n\n");

    let config: Config;
    try {
      config = loadSettings(toStringFlag(values, "config"), overrides, io);
    } catch (error) {
      if (!isConfigFileError(error)) throw error;
      report({
        status: "fail",
        name: "config",
        detail: error.message,
        hint: "fix the file at that line; `cursor-byok config init --config <new file>` writes a commented example",
      });
      report({
        status: "skip",
        name: "others",
        detail: "the remaining checks need a valid configuration",
      });
      return finish(results, io);
    }
    report(checkConfigLoaded(config));
    for (const result of checkKeys(config, io.env)) report(result);
    report(checkAccess(config));
    for (const result of checkWeb(config, io.env)) report(result);
    if (values.live === true) {
      for (const result of await checkProvidersLive(config, { timeoutMs, env: io.env })) {
        report(result);
      }
      if (config.web.search !== null) report(await checkSearchLive(config, timeoutMs));
    } else {
      report({
        status: "skip",
        name: "live",
        detail: "provider requests not sent (--live sends one small request per provider)",
      });
    }
    report(await checkPort(config));
    report(await checkDatabase(config));
    for (const result of await checkIde(config, io, runCommand)) report(result);
    if (config.team !== undefined) report(await checkTeam(config.team, timeoutMs));
    if (values.e2e === true) {
      report(await runEndToEnd(config, url, timeoutMs));
    } else {
      report({
        status: "skip",
        name: "e2e",
        detail: "no agent turn run (--e2e runs one against the running server)",
      });
    }
    return finish(results, io);
  },
};

function runEndToEnd(
  config: Config,
  url: string | undefined,
  timeoutMs: number,
): Promise<CheckResult> | CheckResult {
  const { host, port, accessToken } = config.server;
  if (url === undefined && port === 0) {
    return {
      status: "fail",
      name: "e2e",
      detail: "the configured port is 0 (any free port), so the server's address is unknown",
      hint: "give --url with the address the server printed",
    };
  }
  return checkEndToEnd({
    url: (url ?? `http://${toConnectHost(host)}:${port}`).replace(/\/$/, ""),
    timeoutMs,
    ...(accessToken.type === "none" ? {} : { accessToken: accessToken.value.reveal() }),
  });
}

function toTimeoutMs(flag: string | undefined): number {
  if (flag === undefined) return DEFAULT_TIMEOUT_S * 1000;
  const seconds = Number(flag);
  if (!/^\d+(\.\d+)?$/.test(flag) || !(seconds > 0)) {
    throw new UsageError("--timeout must be a positive number of seconds");
  }
  return Math.round(seconds * 1000);
}

const STATUS_TEXT = { ok: "ok  ", fail: "FAIL", skip: "skip" } as const;

export function toResultText(result: CheckResult): string {
  const line = `${STATUS_TEXT[result.status]}  ${result.name.padEnd(8)}  ${result.detail}\n`;
  return result.hint === undefined ? line : `${line}${" ".repeat(16)}fix: ${result.hint}\n`;
}

function finish(results: readonly CheckResult[], io: CliIO): number {
  const failed = results.filter((result) => result.status === "fail").length;
  io.stdout.write(
    failed === 0
      ? "\nAll checks passed.\n"
      : `\n${failed} check${failed === 1 ? "" : "s"} failed.\n`,
  );
  return failed === 0 ? 0 : 1;
}
