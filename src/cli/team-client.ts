/**
 * `serve` on a team's client (`team.server` set; docs/team.md "Clients"): no agent runs here.
 * The IDE proxy runs as in IDE mode, but the calls a cursor-byok server answers go to the team
 * server through the team relay, with the user's team token; everything else goes to Cursor's
 * real hosts unchanged, so the team token never travels there.
 */
import type { Config, TeamClientSettings } from "../config/index.ts";
import { startIdeProxy, toIdeProxyStartProblem } from "../ide/ide-proxy.ts";
import { readJournal, toIdeDirectory } from "../ide/journal.ts";
import type { IdeProxy } from "../transport/proxy/proxy.ts";
import { createTeamRelay } from "../transport/proxy/team-relay.ts";
import { listServedProcedures } from "../transport/server.ts";
import type { CliIO } from "./io.ts";
import { createLog } from "./log.ts";
import { untilStopped } from "./until-stopped.ts";

export async function serveTeamClient(
  config: Config,
  team: TeamClientSettings,
  io: CliIO,
): Promise<number> {
  const ideDirectory = toIdeDirectory(config.dataDirectory);
  const ide = readJournal(ideDirectory);
  if (ide.type !== "ok") {
    io.stderr.write(
      `cursor-byok: not starting: team.server is set (${team.server}), so \`serve\` runs only the ` +
        `IDE proxy for it, and IDE mode ${ide.type === "bad" ? `is unclear: ${ide.problem}` : "is not set up: run `cursor-byok ide setup` first"}.\n` +
        "For cursor-agent no server is needed here: `cursor-byok agent` sends it to the team server.\n",
    );
    return 1;
  }
  const log = createLog({ level: config.logLevel, pretty: io.stdout.isTTY === true });
  const relay = createTeamRelay({
    server: team.server,
    token: team.token,
    tokenVariable: team.tokenVariable,
    log,
    forIde: true,
  });
  const served = listServedProcedures();
  const proxyUrl = new URL(ide.journal.proxyUrl);
  let proxy: IdeProxy;
  try {
    proxy = await startIdeProxy({
      ideDirectory,
      host: proxyUrl.hostname,
      port: Number(proxyUrl.port),
      server: { servesProcedure: (path) => served.has(path), serveTrusted: relay.serve },
      log,
      allowedConnectPorts: config.ide.allowConnectPorts,
    });
  } catch (error) {
    relay.close();
    io.stderr.write(`cursor-byok: ${toIdeProxyStartProblem(error, ide.journal.proxyUrl)}\n`);
    return 1;
  }
  log.info(
    { proxy: proxy.url, team: team.server },
    "the IDE proxy is listening for the team server",
  );
  const lines = [
    "",
    `cursor-byok is serving on ${proxy.url} (the IDE proxy; Cursor's settings point here)`,
    `  team:     the agent runs on ${team.server}`,
    team.token === undefined
      ? `  token:    NOT SET: the agent answers with an error until ${team.tokenVariable} holds your team token (then restart this)`
      : `  token:    yours, from ${team.tokenVariable} (sent to the team server only)`,
    "  cursor-agent: `cursor-byok agent` (it needs no server here)",
    "",
    "Stop with Ctrl-C.",
    "",
  ];
  (io.stdout.isTTY === true ? io.stdout : io.stderr).write(lines.join("\n"));
  await untilStopped(log);
  await proxy.close();
  relay.close();
  log.info({}, "stopped");
  return 0;
}
