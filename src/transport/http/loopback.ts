/** Loopback addresses: the only ones a server of ours listens on without an access token. */
import { isIPv4, isIPv6 } from "node:net";

/** `localhost`, `127.0.0.0/8`, `::1` (also IPv4-mapped loopback). Other host names are not trusted. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const lower = bare.toLowerCase();
  if (lower === "localhost") return true;
  if (isIPv4(lower)) return lower.startsWith("127.");
  if (isIPv6(lower)) {
    if (lower === "::1" || lower === "0:0:0:0:0:0:0:1") return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
    return mapped?.[1]?.startsWith("127.") === true;
  }
  return false;
}
