/**
 * The IDE proxy as `serve` runs it (docs/ide.md): our CA issues the certificates, `*.cursor.sh`
 * is intercepted, the server in this process answers what it serves (or, on a team's client, the
 * team relay sends exactly those calls to the team server: docs/team.md "Clients"), and the last
 * request seen from the IDE is noted for `ide status` and `doctor`.
 */
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { isLoopbackHost } from "../transport/http/loopback.ts";
import type { Log } from "../transport/log.ts";
import { type IdeProxy, type ProxyTraffic, startProxy } from "../transport/proxy/proxy.ts";
import type { LocalServer } from "../transport/server.ts";
import {
  CA_PERMITTED_DOMAIN,
  createLeafIssuer,
  isWithinDomain,
  readCertificateAuthority,
} from "./ca.ts";

export const LAST_SEEN_FILE = "last-seen.json";
/** The last-seen note is written at most this often. */
const LAST_SEEN_EVERY_MS = 5_000;

export interface IdeProxyOptions {
  readonly ideDirectory: string;
  readonly host: string;
  readonly port: number;
  /** Who answers the served procedures: the server in this process, or the team relay. */
  readonly server: Pick<LocalServer, "servesProcedure" | "serveTrusted">;
  readonly log: Log;
  readonly allowedConnectPorts?: readonly number[];
}

/**
 * What `serve` says when the IDE proxy cannot listen: the port Cursor's settings point at is taken
 * (the user must free it or set up again on another), or another reason in the system's words.
 */
export function toIdeProxyStartProblem(error: unknown, proxyUrl: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "EADDRINUSE"
    ? `the IDE proxy's port ${new URL(proxyUrl).port} is in use (Cursor's settings point at ${proxyUrl}). Stop what uses it, or run \`cursor-byok ide undo\` and set up again with --proxy-port.`
    : `could not start the IDE proxy: ${(error as Error).message}`;
}

export async function startIdeProxy(options: IdeProxyOptions): Promise<IdeProxy> {
  const found = readCertificateAuthority(options.ideDirectory);
  if (found.type !== "ok") {
    throw new Error(
      found.type === "missing"
        ? `IDE mode is set up but its CA is missing from ${options.ideDirectory}: run \`cursor-byok ide undo\`, then \`cursor-byok ide setup\``
        : `the IDE CA is unusable: ${found.problem}`,
    );
  }
  const issuer = createLeafIssuer(found.authority);
  let lastWritten = 0;
  const noteTraffic = (traffic: ProxyTraffic): void => {
    if (traffic.probe) return;
    const now = Date.now();
    if (now - lastWritten < LAST_SEEN_EVERY_MS) return;
    lastWritten = now;
    const note = { at: new Date(now).toISOString(), ...traffic };
    writeFile(path.join(options.ideDirectory, LAST_SEEN_FILE), `${JSON.stringify(note)}\n`).catch(
      (error: Error) => options.log.debug({ error: error.message }, "could not note IDE traffic"),
    );
  };
  return startProxy({
    host: options.host,
    port: options.port,
    isIntercepted: (host) => isWithinDomain(host, CA_PERMITTED_DOMAIN),
    certificateFor: (host) => issuer.certificateFor(host),
    serves: options.server.servesProcedure,
    serve: options.server.serveTrusted,
    log: options.log,
    onTraffic: noteTraffic,
    ...(options.allowedConnectPorts === undefined
      ? {}
      : { allowedConnectPorts: options.allowedConnectPorts }),
    ...testUpstream(options.log),
  });
}

/**
 * Tests point the proxy's upstream at local stand-ins of the real hosts (no test may reach the
 * internet): `CURSOR_BYOK_TEST_UPSTREAM` = JSON `{"host": "127.0.0.1:port", …}` and
 * `CURSOR_BYOK_TEST_UPSTREAM_CA` = a PEM file trusted for them. A warning is logged when set.
 */
function testUpstream(log: Log): {
  resolveUpstream?: (host: string, port: number) => { host: string; port: number };
  upstreamCa?: readonly string[];
} {
  const map = process.env.CURSOR_BYOK_TEST_UPSTREAM;
  const caFile = process.env.CURSOR_BYOK_TEST_UPSTREAM_CA;
  if (map === undefined || map === "") return {};
  const hosts = JSON.parse(map) as Record<string, string>;
  // Stand-ins live on this machine: a stray variable can never send a user's traffic elsewhere.
  for (const target of Object.values(hosts)) {
    if (!isLoopbackHost(target.replace(/:\d+$/, ""))) {
      throw new Error(`CURSOR_BYOK_TEST_UPSTREAM may only name loopback addresses, not ${target}`);
    }
  }
  log.warn({}, "CURSOR_BYOK_TEST_UPSTREAM is set: forwarded traffic goes to local test stand-ins");
  const result: {
    resolveUpstream: (host: string, port: number) => { host: string; port: number };
    upstreamCa?: readonly string[];
  } = {
    resolveUpstream: (host, port) => {
      const to = hosts[host] ?? hosts["*"];
      if (to === undefined) return { host, port };
      const [toHost = "127.0.0.1", toPort = "0"] = to.split(":");
      return { host: toHost, port: Number(toPort) };
    },
  };
  if (caFile !== undefined && caFile !== "") {
    result.upstreamCa = [readFileSync(caFile, "utf8")];
  }
  return result;
}
