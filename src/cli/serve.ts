/**
 * `cursor-byok serve` (also `cursor-byok` alone and `npm start`): the server on the SQLite store
 * with the configured models (the demo model when none is configured), until SIGINT/SIGTERM.
 *
 * It refuses to start on a configuration that cannot work: a model whose key variable is not
 * set, or a non-loopback address without an access token. A second signal during shutdown ends
 * the process at once.
 *
 * Why one file of about 410 lines: it is the composition root, the one place a reader sees the
 * whole assembly (store, models, runner, server, proxy, cluster) and the shutdown order that
 * undoes it.
 */
import { randomUUID } from "node:crypto";
import {
  type Config,
  isLoopbackHost,
  toBindRefusal,
  toConnectHost,
  toDefaultConfigPath,
} from "../config/index.ts";
import { errorMessage } from "../errors/error-message.ts";
import { startIdeProxy, toIdeProxyStartProblem } from "../ide/ide-proxy.ts";
import { readJournal, toIdeDirectory } from "../ide/journal.ts";
import { toSettingsPath } from "../ide/settings-file.ts";
import { readIdeStatus, toStaleProblem } from "../ide/status.ts";
import { runCommand } from "../ide/trust.ts";
import { createLLM, gateLLM } from "../llm/index.ts";
import { createRunner } from "../runner/runner.ts";
import { openClusterDirectory, type Store } from "../store/index.ts";
import { logModelSwitches, logRunnerErrors } from "../transport/log.ts";
import { loadPathEncryptionKeys } from "../transport/path-encryption-keys.ts";
import type { IdeProxy } from "../transport/proxy/proxy.ts";
import {
  DEFAULT_SERVER_OPTIONS,
  type LocalServer,
  type Server,
  startServer,
} from "../transport/server.ts";
import {
  CONFIG_OPTION,
  HELP_OPTION,
  LOG_LEVEL_OPTION,
  parseFlags,
  SERVER_OPTIONS,
  toOverrides,
  toStringFlag,
} from "./args.ts";
import type { Command } from "./command.ts";
import { toReadSetup } from "./dashboard-setup.ts";
import { toProxyUrl } from "./ide.ts";
import { createLog } from "./log.ts";
import { type OpenedStore, openServerStore } from "./open-store.ts";
import { loadSettings } from "./settings.ts";
import { serveTeamClient } from "./team-client.ts";
import { logLedgerFailures, logPruneFailures, openTeam } from "./team-users.ts";
import { untilStopped } from "./until-stopped.ts";
import { toWebSummary, toWebTools } from "./web-tools.ts";

const OPTIONS = {
  ...HELP_OPTION,
  ...CONFIG_OPTION,
  ...SERVER_OPTIONS,
  ...LOG_LEVEL_OPTION,
} as const;

/** How long shutdown may take, from the signal, before the process exits anyway. */
const SHUTDOWN_LIMIT_MS = 15_000;
/** How long giving this instance's streams up may take (docs/team.md "Shutdown"). */
const LEAVE_LIMIT_MS = 5_000;

export const SERVE_COMMAND: Command = {
  name: "serve",
  summary: "run the server (the default command; `npm start` runs it)",
  help: (io) =>
    [
      "Usage: cursor-byok serve [options]     (or just: cursor-byok [options])",
      "",
      "Runs the server that Cursor's agent talks to, until Ctrl-C (SIGINT) or SIGTERM.",
      "Flags win over the configuration file, which wins over environment shortcuts.",
      "",
      "Options:",
      "  --host <address>     address to listen on (server.host; default 127.0.0.1). Any",
      "                       non-loopback address needs an access token (server.accessTokenEnv)",
      "  --port <number>      port to listen on (server.port; default 8765; 0: any free port)",
      "  --data-dir <dir>     where the database lives (data.directory)",
      `  --config <file>      the configuration file (default ${toDefaultConfigPath(io)},`,
      "                       or CURSOR_BYOK_CONFIG)",
      "  --log-level <level>  fatal, error, warn, info, debug, trace or silent (log.level; default info)",
      "  -h, --help           show this help",
      "",
    ].join("\n"),
  async run(args, io) {
    const { values } = parseFlags(args, OPTIONS);
    const config = loadSettings(toStringFlag(values, "config"), toOverrides(values), io);
    // A team's client serves no agent itself: its IDE proxy relays to the team server.
    if (config.team !== undefined) return serveTeamClient(config, config.team, io);
    const problems = toStartProblems(config);
    if (problems.length > 0) {
      io.stderr.write(
        `cursor-byok: not starting:\n${problems.map((problem) => `  ${problem.replaceAll("\n", "\n  ")}`).join("\n")}\n` +
          "Run `cursor-byok doctor` to check the whole setup.\n",
      );
      return 1;
    }
    const log = createLog({ level: config.logLevel, pretty: io.stdout.isTTY === true });
    const ideDirectory = toIdeDirectory(config.dataDirectory);
    const ide = readJournal(ideDirectory);
    if (ide.type === "bad") {
      io.stderr.write(`cursor-byok: not starting: IDE mode: ${ide.problem}\n`);
      return 1;
    }
    const ideMode = ide.type === "ok";
    const ideProblem = toIdeModeProblem(config, ideMode);
    if (ideProblem !== undefined) {
      io.stderr.write(`cursor-byok: not starting: ${ideProblem}\n`);
      return 1;
    }
    if (ideMode && config.server.offerHttp2) {
      log.warn(
        {},
        "server.http2 is ignored in IDE mode: Cursor's HTTP/2 client does not use the proxy, so clients are told to use HTTP/1.1",
      );
    }
    const opened = await openServerStore(config, (message) => log.warn({}, message));
    const store: Store = opened.store;
    const team = config.server.users
      ? openTeam(config, {
          onLedgerFailure: logLedgerFailures(log),
          onPruneFailure: logPruneFailures(log),
        })
      : undefined;
    // Several instances may share the PostgreSQL store: streams are owned and forwarded.
    const cluster =
      config.postgres === undefined
        ? undefined
        : await openClusterDirectory({
            url: config.postgres.url.reveal(),
            instanceID: randomUUID(),
            // Self-fencing (docs/team.md "Takeover"): its lease may soon be taken over, so this
            // instance stops serving at once, as a crash would: streams, turns, model calls.
            onLeaseLost: () => {
              log.error(
                {},
                "could not renew this instance's lease in the database: exiting before another " +
                  "instance takes its streams over (a supervisor restarts it)",
              );
              process.exit(1);
            },
          });
    let server: LocalServer;
    try {
      const providers = createLLM({
        models: config.models.map((model) => model.config),
        onWarning: (message) => log.warn({}, message),
      });
      const llm = team === undefined ? providers : gateLLM(providers, team.admit);
      server = await startServer(
        {
          store,
          llm,
          runner: createRunner({
            store,
            llm,
            onError: logRunnerErrors(log),
            onModelSwitch: logModelSwitches(log),
            // A fork copies only a conversation the requesting user may see (loop/fork.ts).
            ...(team === undefined ? {} : { mayCopy: team.mayCopy }),
          }),
          log,
          pathEncryptionKeys: loadPathEncryptionKeys(config.dataDirectory),
          readSetup: toReadSetup(
            config,
            io.env,
            ide.type === "ok" ? `proxy on ${ide.journal.proxyUrl}` : "not set up",
          ),
          web: toWebTools(config.web),
          ...(team === undefined
            ? {}
            : { authenticate: team.authenticate, access: team.access, mayRead: team.mayCopy }),
          ...(cluster === undefined ? {} : { cluster }),
        },
        {
          ...DEFAULT_SERVER_OPTIONS,
          ...(config.helperModel === undefined ? {} : { helperModel: config.helperModel }),
          stream: {
            ...DEFAULT_SERVER_OPTIONS.stream,
            ...(config.subagentModels === undefined
              ? {}
              : { subagentModels: config.subagentModels }),
            ...(config.subagentMaxConcurrent === undefined
              ? {}
              : { subagentMaxConcurrent: config.subagentMaxConcurrent }),
            ...(config.subagentMaxSteps === undefined
              ? {}
              : { subagentMaxSteps: config.subagentMaxSteps }),
            blobCheckpoints: config.server.blobCheckpoints,
            blobWriteTimeoutMs: config.server.blobWriteTimeoutMs,
            blobReadTimeoutMs: config.server.blobReadTimeoutMs,
          },
          host: config.server.host,
          port: config.server.port,
          runSseContentType: config.server.runSseContentType,
          offerHttp2: config.server.offerHttp2 && !ideMode,
          maxStreams: config.server.maxStreams,
          listen: {
            ...DEFAULT_SERVER_OPTIONS.listen,
            maxConnections: config.server.maxConnections,
          },
          ...(config.server.accessToken.type === "none"
            ? {}
            : { accessToken: config.server.accessToken.value.reveal() }),
        },
      );
    } catch (error) {
      await team?.close();
      await cluster?.close();
      await opened.close();
      io.stderr.write(`cursor-byok: ${toListenProblem(error, config)}\n`);
      return 1;
    }
    await cluster?.advertise(
      config.server.advertiseUrl ??
        `http://${toConnectHost(server.address.address)}:${server.address.port}`,
    );
    let proxy: IdeProxy | undefined;
    if (ide.type === "ok") {
      const proxyUrl = new URL(ide.journal.proxyUrl);
      try {
        proxy = await startIdeProxy({
          ideDirectory,
          host: proxyUrl.hostname,
          port: Number(proxyUrl.port),
          server,
          log,
          allowedConnectPorts: config.ide.allowConnectPorts,
        });
      } catch (error) {
        await server.close();
        await team?.close();
        await cluster?.close();
        await opened.close();
        io.stderr.write(`cursor-byok: ${toIdeProxyStartProblem(error, ide.journal.proxyUrl)}\n`);
        return 1;
      }
      log.info({ proxy: proxy.url }, "the IDE proxy is listening");
    } else {
      const stale = toStaleProblem(
        await readIdeStatus({
          ideDirectory,
          settingsFile: toSettingsPath(io),
          configuredProxyUrl: toProxyUrl(config),
          run: runCommand,
        }),
      );
      if (stale !== undefined) log.warn({}, stale);
    }
    log.info(
      {
        url: server.url,
        database: opened.location,
        config: config.file.exists ? config.file.path : null,
        models: config.models.map((model) => model.config.name),
      },
      "cursor-byok is listening",
    );
    // On a terminal the banner is for the user; otherwise stdout carries JSON log lines only.
    (io.stdout.isTTY === true ? io.stdout : io.stderr).write(
      toBanner(config, server, proxy, opened.location),
    );
    await untilStopped(log);
    // The bound runs from the signal, whatever step stalls.
    const limit = setTimeout(() => {
      log.error({ limitMs: SHUTDOWN_LIMIT_MS }, "shutdown did not finish in time; exiting");
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS);
    limit.unref();
    // Hand this instance's streams over: others take them at once; then close.
    if (cluster !== undefined) {
      // The turn blobs written so far first, so the instances that take the streams over can
      // look up their clients' checkpoints (transport/turn-blob-origins.ts); bounded like `leave`.
      await within(server.flushTurnBlobs(), LEAVE_LIMIT_MS);
      const left = await within(
        cluster.leave().then(
          () => true,
          () => false,
        ),
        LEAVE_LIMIT_MS,
      );
      if (left !== true) {
        log.warn(
          { limitMs: LEAVE_LIMIT_MS },
          "could not give this instance's streams up (the database did not answer in time): " +
            "the other instances take them over when this instance's lease expires",
        );
      }
    }
    // The same shutdown with or without other instances: turns not over are left for a
    // reconnect, their clients' connections dropped (transport/server.ts `close`).
    await shutDown(server, proxy, opened);
    await team?.close();
    await cluster?.close();
    clearTimeout(limit);
    log.info({}, "stopped");
    return 0;
  },
};

/**
 * Why `config` cannot serve: missing keys (of models and of the chosen search provider) and an
 * unprotected non-loopback address.
 */
export function toStartProblems(config: Config): string[] {
  const problems = config.missingKeys.map((missing) => missing.message);
  const search = config.web.search;
  if (search !== null && search.problem !== null) problems.push(search.problem);
  const refusal = toBindRefusal(
    config.server.host,
    config.server.accessToken.type !== "none" || config.server.users,
    config.file.path,
  );
  if (config.server.users && config.postgres === undefined) {
    problems.push(
      "server.users needs the PostgreSQL store (data.postgres.url or DATABASE_URL): users, their " +
        "tokens and budgets are kept there (docs/team.md).",
    );
  }
  if (config.server.users && config.server.accessToken.type === "none") {
    problems.push(
      "server.users needs the admin's access token (server.accessTokenEnv): the dashboard shows " +
        "every user's conversations and is opened with that token only (docs/team.md).",
    );
  }
  const advertise = toAdvertiseProblem(config);
  if (advertise !== undefined) problems.push(advertise);
  if (refusal !== undefined) problems.push(refusal);
  return problems;
}

/**
 * Why IDE mode (a journal left by `ide setup`) cannot run with `config`. The IDE proxy serves
 * the IDE without a token (Cursor cannot send one), as the admin: no user, no bindings, no
 * budgets. So a team's server (`server.users`) never runs it — each person's IDE reaches the
 * team server through their own machine's `serve` with `team.server` (docs/team.md "Clients") —
 * and neither does a server with an access token, which the proxy would bypass.
 */
export function toIdeModeProblem(config: Config, ideMode: boolean): string | undefined {
  if (!ideMode) return undefined;
  if (config.server.users) {
    return (
      "IDE mode is set up, and this is a team's server (server.users). The IDE proxy cannot " +
      "send a user's token, so it would serve any local account as the admin: every user's " +
      "streams and conversations, no budgets. Run `cursor-byok ide undo` here; each person's " +
      "IDE reaches the team server through `cursor-byok serve` with team.server on their own " +
      'machine (docs/team.md "Clients").'
    );
  }
  if (config.server.accessToken.type !== "none") {
    return (
      "IDE mode is set up, and the server has an access token. Cursor cannot send that token, " +
      "so the IDE proxy would let any local user use your keys without it. Remove the access " +
      "token (IDE mode is for one person's machine), or run `cursor-byok ide undo`."
    );
  }
  return undefined;
}

/**
 * Several instances forward to each other at the address each advertises (docs/team.md). An
 * instance listening beyond loopback serves other machines, so a loopback address (the default
 * when `server.advertiseUrl` is unset) would send the others' forwards to themselves.
 */
function toAdvertiseProblem(config: Config): string | undefined {
  if (config.postgres === undefined || isLoopbackHost(config.server.host)) return undefined;
  const url = config.server.advertiseUrl;
  if (url !== undefined && !isLoopbackHost(new URL(url).hostname)) return undefined;
  return (
    `server.advertiseUrl ${url === undefined ? "is not set" : `is ${url}, a loopback address`}, ` +
    `and the server listens on ${config.server.host} with the PostgreSQL store: the other ` +
    "instances would forward this one's streams to themselves. Set server.advertiseUrl to the " +
    "address the other instances reach this one at, on a private network (e.g. " +
    "http://10.0.0.5:8765; docs/team.md)."
  );
}

function toListenProblem(error: unknown, config: Config): string {
  const { host, port } = config.server;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case "EADDRINUSE":
      return (
        `port ${port} on ${host} is already in use. Is cursor-byok already running? ` +
        "Stop it, or pick another port with --port or server.port."
      );
    case "EACCES":
      return `not allowed to listen on port ${port} (ports below 1024 need privileges); pick another with --port.`;
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
      return `cannot listen on ${host}: it is not an address of this machine (server.host / --host).`;
    default:
      return `could not start the server: ${errorMessage(error)}`;
  }
}

function toBanner(
  config: Config,
  server: Server,
  proxy: IdeProxy | undefined,
  database: string,
): string {
  const url = `http://${toConnectHost(server.address.address)}:${server.address.port}`;
  const names = config.models.map((model, index) =>
    index === 0 ? `${model.config.name} (default)` : model.config.name,
  );
  const models =
    names.length === 0
      ? "demo (no provider configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or OPENROUTER_API_KEY, or run `cursor-byok config init`)"
      : names.join(", ");
  const lines = [
    "",
    `cursor-byok is serving on ${url}`,
    `  models:   ${models}`,
    `  config:   ${config.file.exists ? config.file.path : `${config.file.path} (not found; using defaults)`}`,
    `  database: ${database}`,
    `  dashboard: ${url}/ui/`,
    `  web:      ${toWebSummary(config.web)}`,
  ];
  if (proxy !== undefined) {
    lines.push(
      `  IDE:      proxy on ${proxy.url} (Cursor's settings point here; \`cursor-byok ide status\`)`,
    );
  }
  if (config.server.accessToken.type !== "none") {
    lines.push(
      `  access:   clients must send "authorization: Bearer <token>" (${config.server.accessToken.type === "env" ? `the value of ${config.server.accessToken.variable}` : "server.accessToken"})`,
    );
  }
  lines.push(
    "",
    "Point the Cursor CLI at it, from another terminal:",
    `  npx cursor-byok agent --url ${url}    (in this project's directory)`,
    "or run cursor-agent with the endpoint flags yourself:",
    `  cursor-agent --endpoint ${url} --agent-endpoint ${url}`,
    "",
    "Stop with Ctrl-C.",
    "",
  );
  return lines.join("\n");
}

/**
 * The server first, then the IDE proxy: the IDE's streams come through the proxy's connections,
 * so closing it first would drop every one of them, the ends of turns that are over included
 * (docs/architecture.md "Shutdown"); the held ones are dropped when the proxy closes.
 */
async function shutDown(
  server: Server,
  proxy: IdeProxy | undefined,
  store: OpenedStore,
): Promise<void> {
  await server.close();
  await proxy?.close();
  await store.close();
}

/** `work`'s value, or `undefined` when it is not done within `ms` (it is left running). */
function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
