/**
 * Who may reach the server. By default it listens on loopback, where only this machine's users
 * can connect. Listening anywhere else exposes the user's provider keys to whoever can reach
 * the address, so it is allowed only with an access token that every request must present.
 */
import { isIPv6 } from "node:net";
import { isLoopbackHost } from "../transport/http/loopback.ts";

export { isLoopbackHost };

/** The address clients on this machine use to reach a server listening on `host`. */
export function toConnectHost(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return isIPv6(host) ? `[${host}]` : host;
}

/**
 * Why the server must not listen on `host`, or `undefined` when it may: a non-loopback address
 * needs an access token. `configFile` is named in the explanation.
 */
export function toBindRefusal(
  host: string,
  hasAccessToken: boolean,
  configFile: string,
): string | undefined {
  if (hasAccessToken || isLoopbackHost(host)) return undefined;
  return [
    `refusing to listen on ${host} without an access token: anyone who can reach this address`,
    "could run the agent on your provider keys.",
    `Either listen on loopback (server.host: 127.0.0.1 in ${configFile}, or --host 127.0.0.1),`,
    "or set server.accessTokenEnv to the name of an environment variable holding a long random",
    "token; clients must then send `authorization: Bearer <token>`.",
  ].join("\n");
}
