/**
 * `cursor-byok agent -- <cursor-agent args>`: runs the installed Cursor CLI against this server.
 * It adds the endpoint flags (`--endpoint`, `--agent-endpoint`) and removes proxy variables
 * from the child's environment, because a proxy would carry loopback traffic elsewhere
 * (docs/protocol.md §4.2). It exits with the CLI's exit code.
 *
 * On a team's client (`--team <url>` or `team.server`; docs/team.md "Clients") the endpoint is
 * a loopback relay in this process that sends every call to the team server with the user's
 * team token instead of cursor-agent's own Cursor sign-in token (transport/proxy/team-relay.ts).
 */
import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import { connect } from "node:net";
import { constants as osConstants } from "node:os";
import path from "node:path";
import {
  DEFAULT_TEAM_TOKEN_VARIABLE,
  type TeamClientSettings,
  toConnectHost,
  toDefaultConfigPath,
  toTeamClientSettings,
  toTeamServerProblem,
} from "../config/index.ts";
import { listen } from "../transport/http/listen.ts";
import { silentLog } from "../transport/log.ts";
import { guardLocalRelay } from "../transport/proxy/local-relay-gate.ts";
import { createTeamRelay } from "../transport/proxy/team-relay.ts";
import { listServedProcedures } from "../transport/server.ts";
import { EMPTY_REPLIES } from "../transport/startup-procedures.ts";
import { CONFIG_OPTION, HELP_OPTION, parseFlags, toStringFlag } from "./args.ts";
import type { Command } from "./command.ts";
import type { CliIO } from "./io.ts";
import { loadSettings } from "./settings.ts";
import { UsageError } from "./usage-error.ts";

/** The variable README and the starter config name for `server.accessTokenEnv` (the admin's). */
const ADMIN_TOKEN_VARIABLE = "CURSOR_BYOK_TOKEN";

const OPTIONS = {
  ...HELP_OPTION,
  ...CONFIG_OPTION,
  url: { type: "string" },
  team: { type: "string" },
} as const;

/** Names the Cursor CLI installs itself under, in the order they are looked for. */
export const AGENT_EXECUTABLES = ["cursor-agent", "agent"] as const;

/** Removed from the child's environment, in both spellings. */
export const PROXY_VARIABLES = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"].flatMap((name) => [
  name,
  name.toLowerCase(),
]);

const INSTALL_HINT = "curl https://cursor.com/install -fsS | bash";
const REACH_TIMEOUT_MS = 3_000;

export const AGENT_COMMAND: Command = {
  name: "agent",
  summary: "run cursor-agent against this server: cursor-byok agent -- <cursor-agent args>",
  help: (io) =>
    [
      "Usage: cursor-byok agent [--url <url> | --team <url>] [--config <file>] -- [cursor-agent arguments]",
      "",
      "Runs the installed Cursor CLI (cursor-agent, or agent) against a running cursor-byok",
      "server: adds --endpoint <url> --agent-endpoint <url>, clears HTTP_PROXY, HTTPS_PROXY and",
      "ALL_PROXY for it, and passes everything after -- to it unchanged. Start the server first",
      "(cursor-byok serve, or npm start).",
      "",
      "Options:",
      "  --url <url>      the server (default http://<server.host>:<server.port> from the config)",
      "  --team <url>     a team's server (default team.server from the config): cursor-agent",
      `                   reaches it through a local relay that sends your team token (from`,
      `                   ${DEFAULT_TEAM_TOKEN_VARIABLE}, or team.tokenEnv) instead of its Cursor sign-in`,
      `  --config <file>  the configuration file (default ${toDefaultConfigPath(io)},`,
      "                   or CURSOR_BYOK_CONFIG)",
      "  -h, --help       show this help",
      "",
      "Examples:",
      "  cursor-byok agent",
      '  cursor-byok agent -- --model claude-sonnet-5-5 -p "explain this repository"',
      "",
    ].join("\n"),
  async run(args, io) {
    const split = args.indexOf("--");
    const own = split < 0 ? args : args.slice(0, split);
    const passed = split < 0 ? [] : args.slice(split + 1);
    const { values, positionals } = parseFlags(own, OPTIONS, true);
    const team = toTeam(values, io);
    const url =
      team === undefined
        ? toServerUrl(toStringFlag(values, "url"), toStringFlag(values, "config"), io)
        : team.server;

    const executable = findExecutable(AGENT_EXECUTABLES, io);
    if (executable === undefined) {
      io.stderr.write(
        "cursor-byok: the Cursor CLI is not installed (no cursor-agent or agent on PATH).\n" +
          `Install it with:\n  ${INSTALL_HINT}\nthen open a new terminal and run this again.\n`,
      );
      return 127;
    }
    if (team !== undefined && team.token === undefined) {
      io.stderr.write(
        `cursor-byok: no team token: set ${team.tokenVariable} to the token \`cursor-byok users add\`\n` +
          "printed for you (your team's admin has it), then run this again.\n",
      );
      return 1;
    }
    if (!(await isReachable(url))) {
      io.stderr.write(
        team === undefined
          ? `cursor-byok: no server answers at ${url}.\n` +
              "Start it first, in another terminal: `cursor-byok serve` (or `npm start`), or give\n" +
              "--url with the address it prints.\n"
          : `cursor-byok: the team server ${url} cannot be reached from here.\n`,
      );
      return 1;
    }
    if (team !== undefined)
      return runThroughRelay(executable, team, [...positionals, ...passed], io);
    return runChild(
      executable,
      ["--endpoint", url, "--agent-endpoint", url, ...positionals, ...passed],
      toChildEnv(io.env),
      io,
    );
  },
};

/** `--team`, else `team.server` of the configuration; `undefined`: not a team's client. */
function toTeam(
  values: Parameters<typeof toStringFlag>[0],
  io: CliIO,
): TeamClientSettings | undefined {
  const flag = toStringFlag(values, "team");
  if (flag !== undefined && toStringFlag(values, "url") !== undefined) {
    throw new UsageError("give --url (your own server) or --team (a team's server), not both");
  }
  if (toStringFlag(values, "url") !== undefined) return undefined;
  const configured = loadSettings(toStringFlag(values, "config"), {}, io).team;
  if (flag === undefined) return configured;
  const problem = toTeamServerProblem(flag);
  if (problem !== undefined) throw new UsageError(`--team ${problem}`);
  return toTeamClientSettings(
    flag,
    configured?.tokenVariable ?? DEFAULT_TEAM_TOKEN_VARIABLE,
    io.env,
  );
}

/**
 * Runs cursor-agent against a loopback relay to the team server for as long as it runs. The
 * relay answers on 127.0.0.1 only, on a port picked for this run.
 */
async function runThroughRelay(
  executable: string,
  team: TeamClientSettings,
  args: readonly string[],
  io: CliIO,
): Promise<number> {
  const relay = createTeamRelay({
    server: team.server,
    token: team.token,
    tokenVariable: team.tokenVariable,
    log: silentLog,
  });
  const listener = await listen(
    guardLocalRelay(relay.serve, new Set([...listServedProcedures(), ...EMPTY_REPLIES])),
    "127.0.0.1",
    0,
  );
  const endpoint = `http://127.0.0.1:${listener.address.port}`;
  try {
    return await runChild(
      executable,
      ["--endpoint", endpoint, "--agent-endpoint", endpoint, ...args],
      toRelayedChildEnv(io.env, team.tokenVariable),
      io,
    );
  } finally {
    listener.destroy();
    await listener.close();
    relay.close();
  }
}

/** `--url`, else the configured host and port as a client on this machine reaches them. */
function toServerUrl(flag: string | undefined, configFlag: string | undefined, io: CliIO): string {
  if (flag !== undefined) {
    let parsed: URL;
    try {
      parsed = new URL(flag);
    } catch {
      throw new UsageError("--url must be an absolute http URL, e.g. http://127.0.0.1:8765");
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new UsageError("--url must be an absolute http URL, e.g. http://127.0.0.1:8765");
    }
    return parsed.origin;
  }
  const { server } = loadSettings(configFlag, {}, io);
  if (server.accessToken.type !== "none") {
    io.stderr.write(
      "cursor-byok: warning: this server requires an access token, and cursor-agent sends its own\n" +
        "Cursor sign-in token instead, so expect `unauthenticated` errors. For cursor-agent, run\n" +
        "the server on loopback without an access token.\n",
    );
  }
  if (server.port === 0) {
    throw new UsageError(
      "the configured port is 0 (any free port): give --url with the server's address",
    );
  }
  return `http://${toConnectHost(server.host)}:${server.port}`;
}

/** The first of `names` that is an executable file on `PATH`. */
export function findExecutable(names: readonly string[], io: CliIO): string | undefined {
  const directories = (io.env.PATH ?? "").split(path.delimiter).filter((dir) => dir !== "");
  const extensions =
    io.platform === "win32"
      ? (io.env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";").filter((ext) => ext !== "")
      : [""];
  for (const name of names) {
    for (const directory of directories) {
      for (const extension of extensions) {
        const candidate = path.join(directory, `${name}${extension}`);
        if (isExecutableFile(candidate)) return candidate;
      }
    }
  }
  return undefined;
}

/** `env` without proxy variables. */
export function toChildEnv(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  const child = { ...env };
  for (const name of PROXY_VARIABLES) delete child[name];
  return child;
}

/**
 * cursor-agent's environment behind the team relay: without the proxy variables and without the
 * team token (and the admin token, should it be set). The relay has read the token already, and
 * cursor-agent's shell tool runs the model's commands in this environment: a prompt injection
 * running `env` would otherwise put the token into a tool result (docs/team.md "Clients").
 */
export function toRelayedChildEnv(
  env: Readonly<Record<string, string | undefined>>,
  tokenVariable: string,
): Record<string, string | undefined> {
  const child = toChildEnv(env);
  for (const name of [tokenVariable, DEFAULT_TEAM_TOKEN_VARIABLE, ADMIN_TOKEN_VARIABLE]) {
    delete child[name];
  }
  return child;
}

function isExecutableFile(candidate: string): boolean {
  try {
    if (!statSync(candidate).isFile()) return false;
    accessSync(candidate, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether something accepts TCP connections at the URL's host and port. */
function isReachable(url: string): Promise<boolean> {
  const parsed = new URL(url);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(parsed.port || (parsed.protocol === "https:" ? 443 : 80));
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: REACH_TIMEOUT_MS });
    const done = (reachable: boolean) => {
      socket.destroy();
      resolve(reachable);
    };
    socket.once("connect", () => done(true));
    socket.once("timeout", () => done(false));
    socket.once("error", () => done(false));
  });
}

/** Runs the child with this terminal; resolves to its exit code. */
function runChild(
  executable: string,
  args: readonly string[],
  env: Record<string, string | undefined>,
  io: CliIO,
): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(executable, args, { stdio: "inherit", env });
    // The terminal sends SIGINT and SIGHUP to the whole foreground group, the child included:
    // we only keep them from stopping us. SIGTERM is addressed to us alone, so it is passed on.
    const ignore = () => {};
    const forward = () => child.kill("SIGTERM");
    process.on("SIGINT", ignore);
    process.on("SIGHUP", ignore);
    process.on("SIGTERM", forward);
    const finish = (code: number) => {
      process.off("SIGINT", ignore);
      process.off("SIGHUP", ignore);
      process.off("SIGTERM", forward);
      resolve(code);
    };
    child.once("error", (error) => {
      io.stderr.write(`cursor-byok: could not run ${executable}: ${error.message}\n`);
      finish(127);
    });
    child.once("exit", (code, signal) => {
      finish(code ?? 128 + (signal === null ? 0 : osConstants.signals[signal]));
    });
  });
}
