/**
 * DNS rebinding: a web page whose host name the attacker points at 127.0.0.1 can send requests
 * to a loopback server as its own origin. A server without an access token therefore answers
 * only requests that name it by a loopback name or its configured host (docs/dashboard.md).
 */
const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]", "::1"];

export type HostCheck = (headers: Readonly<Record<string, unknown>>) => boolean;

export function createHostCheck(extraHosts: readonly string[]): HostCheck {
  const allowed = new Set([...LOOPBACK_NAMES, ...extraHosts.map((host) => host.toLowerCase())]);
  return (headers) => allowed.has(toHostName(headers));
}

/** The host name a request names (`host` or `:authority`), without the port, lower-case. */
export function toHostName(headers: Readonly<Record<string, unknown>>): string {
  const host = String(headers.host ?? headers[":authority"] ?? "").toLowerCase();
  if (host.startsWith("[")) return host.slice(0, host.indexOf("]") + 1);
  const colon = host.lastIndexOf(":");
  return colon < 0 ? host : host.slice(0, colon);
}
