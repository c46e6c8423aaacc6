/**
 * The team relay (docs/team.md "Clients"): Cursor's clients send their own Cursor sign-in token
 * as the bearer token, and no setting makes them send another, so a team server's per-user
 * tokens reach it through this relay on the user's machine. It sends the agent's calls to the
 * team's server with `authorization: Bearer <the user's team token>` in place of the client's
 * own authorization (and with only the headers serving the call needs: no cookies, no Cursor
 * account or machine identifiers), and relays the answer back as it streams.
 *
 * Two clients use it: the IDE proxy (ide/ide-proxy.ts), for the procedures a cursor-byok server
 * answers — everything else still goes to Cursor's real hosts, unchanged, so the team token
 * never travels there — and `cursor-byok agent`, whose loopback endpoint relays every call.
 *
 * Without a token the relay answers each call itself, in the client's protocol, with an error
 * the client shows (`team_token_missing`, naming the variable). The token is never logged.
 */
import type { ServerResponse } from "node:http";
import tls from "node:tls";
import { Code, type ConnectError } from "@connectrpc/connect";
import type { Secret } from "../../llm/index.ts";
import { toProtocolError } from "../cursor/index.ts";
import type { RequestHandler } from "../http/listen.ts";
import type { Log } from "../log.ts";
import { VIA_IDE_PROXY_HEADER } from "../routes.ts";
import { createForwarder, type ProxiedRequest, type ProxiedResponse } from "./forward.ts";

export interface TeamRelayOptions {
  /** The team server's origin, `https://host[:port]` (`http://` on this machine only). */
  readonly server: string;
  /** The user's team token; absent: every call is answered with `team_token_missing`. */
  readonly token: Secret | undefined;
  /** The environment variable the token comes from, named in the error when it is missing. */
  readonly tokenVariable: string;
  readonly log: Log;
  /**
   * The IDE proxy's relay: its calls are marked so the server offers the IDE no HTTP/2
   * (routes.ts), as a local server in IDE mode does.
   */
  readonly forIde?: boolean;
  /** How long connecting to the team server may take. Default 15 s. */
  readonly connectTimeoutMs?: number;
}

export interface TeamRelay {
  readonly serve: RequestHandler;
  close(): void;
}

/**
 * The client headers the team server is given: what serving a call needs (Connect's and gRPC's
 * protocol headers, the body's encoding, the stream's request id, the client's kind and
 * version). Everything else stays on the machine: the client's own credentials
 * (`authorization`, `cookie`) and the identifiers of its Cursor account and machine
 * (`x-session-id`, derived from the sign-in token; `x-cursor-checksum`, which embeds the
 * machine id; `x-client-key`, `x-cursor-config-version`, `x-new-onboarding-completed`, time
 * zone, tracing headers, …; cursor-protocol.md §1.5).
 */
const RELAYED_HEADERS: ReadonlySet<string> = new Set([
  "content-type",
  "content-length",
  "content-encoding",
  "accept",
  "accept-encoding",
  "connect-protocol-version",
  "connect-timeout-ms",
  "connect-content-encoding",
  "connect-accept-encoding",
  "grpc-timeout",
  "grpc-encoding",
  "grpc-accept-encoding",
  "te",
  "user-agent",
  "x-request-id",
  "x-cursor-client-type",
  "x-cursor-client-version",
  "x-ghost-mode",
]);

export function createTeamRelay(options: TeamRelayOptions): TeamRelay {
  const server = new URL(options.server);
  const secure = server.protocol === "https:";
  const port = Number(server.port || (secure ? 443 : 80));
  const forwarder = createForwarder({
    resolve: (host, to) => ({ host, port: to }),
    ca: teamTrustRoots(),
    connectTimeoutMs: options.connectTimeoutMs ?? 15_000,
  });
  const { token } = options;
  let warned = false;
  const rewriteHeaders = (headers: Record<string, string | string[]>) => {
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (RELAYED_HEADERS.has(name)) out[name] = value;
    }
    if (token !== undefined) out.authorization = `Bearer ${token.reveal()}`;
    if (options.forIde === true) out[VIA_IDE_PROXY_HEADER] = "1";
    return out;
  };
  return {
    serve(request, response) {
      if (token === undefined) {
        if (!warned) {
          warned = true;
          options.log.warn(
            { variable: options.tokenVariable, server: server.origin },
            "no team token: the agent's calls are refused until the variable is set",
          );
        }
        answerError(
          request,
          response,
          toProtocolError({ type: "team_token_missing", variable: options.tokenVariable }),
        );
        return;
      }
      forwarder.forward(request, response, {
        host: server.hostname.replace(/^\[(.*)\]$/, "$1"),
        port,
        secure,
        authority: server.host,
        rewriteHeaders,
      });
    },
    close: () => forwarder.close(),
  };
}

/**
 * Trust for the team server: the bundled and system roots, and `NODE_EXTRA_CA_CERTS` (a company
 * CA). Our IDE CA may be among the extra ones, but it is name-constrained to cursor.sh, so it
 * cannot vouch for a team server.
 */
function teamTrustRoots(): readonly string[] {
  const all = new Set<string>(tls.getCACertificates("bundled"));
  for (const kind of ["system", "extra"] as const) {
    try {
      for (const cert of tls.getCACertificates(kind)) all.add(cert);
    } catch {
      // Not readable here: the others alone.
    }
  }
  return [...all];
}

/** `error` in the client's protocol: a Connect end-stream message, or a unary JSON error. */
export function answerError(
  request: ProxiedRequest,
  response: ProxiedResponse,
  error: ConnectError,
): void {
  request.resume();
  const writer = response as ServerResponse;
  const body = { code: codeName(error.code), message: error.rawMessage };
  const contentType = String(request.headers["content-type"] ?? "");
  if (contentType.startsWith("application/connect+")) {
    const json = Buffer.from(JSON.stringify({ error: body }));
    const envelope = Buffer.alloc(5 + json.length);
    envelope.writeUInt8(0x02, 0);
    envelope.writeUInt32BE(json.length, 1);
    json.copy(envelope, 5);
    writer.writeHead(200, { "content-type": contentType });
    writer.end(envelope);
    return;
  }
  // The statuses a server answers these with (server.ts): 401, 404 for an unserved procedure.
  const status =
    error.code === Code.Unauthenticated ? 401 : error.code === Code.Unimplemented ? 404 : 400;
  writer.writeHead(status, {
    "content-type": "application/json",
  });
  writer.end(JSON.stringify(body));
}

/** Connect's name of `code`: the enum's, in snake case (`unauthenticated`, …). */
function codeName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}
