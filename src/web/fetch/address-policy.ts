/**
 * Which addresses the fetcher may connect to. Public unicast addresses only, unless the
 * configured allow-list names the host (exact, case-insensitive) or a CIDR range holding the
 * address: loopback, private (RFC 1918, unique-local), carrier-grade NAT, link-local (which
 * holds the cloud metadata address 169.254.169.254), multicast, documentation, benchmarking and
 * reserved ranges are refused. IPv4-mapped and NAT64 IPv6 addresses are judged by the IPv4
 * address inside them.
 */
import { BlockList, isIP } from "node:net";

export interface AddressPolicy {
  /** Why `address` (which `host` resolved to) may not be reached, or null when it may. */
  refusal(host: string, address: string): string | null;
}

const BLOCKED_V4: readonly [string, number, string][] = [
  ["0.0.0.0", 8, "an unspecified address"],
  ["10.0.0.0", 8, "a private address"],
  ["100.64.0.0", 10, "a carrier-grade NAT address"],
  ["127.0.0.0", 8, "a loopback address"],
  ["169.254.0.0", 16, "a link-local address (cloud metadata lives here)"],
  ["172.16.0.0", 12, "a private address"],
  ["192.0.0.0", 24, "a reserved address"],
  ["192.0.2.0", 24, "a documentation address"],
  ["192.168.0.0", 16, "a private address"],
  ["198.18.0.0", 15, "a benchmarking address"],
  ["198.51.100.0", 24, "a documentation address"],
  ["203.0.113.0", 24, "a documentation address"],
  ["224.0.0.0", 4, "a multicast address"],
  ["240.0.0.0", 4, "a reserved address"],
];

const BLOCKED_V6: readonly [string, number, string][] = [
  ["::", 128, "an unspecified address"],
  ["::1", 128, "a loopback address"],
  ["100::", 64, "a discard address"],
  ["2001:db8::", 32, "a documentation address"],
  ["fc00::", 7, "a private (unique-local) address"],
  ["fe80::", 10, "a link-local address"],
  ["fec0::", 10, "a site-local address"],
  ["ff00::", 8, "a multicast address"],
];

/**
 * @param allow host names (`wiki.corp.example`) and CIDR ranges (`10.1.0.0/16`, `fd00::/8`)
 *   that may be reached although they are not public.
 */
export function createAddressPolicy(allow: readonly string[] = []): AddressPolicy {
  const hosts = new Set<string>();
  const allowed = new BlockList();
  for (const entry of allow) {
    const range = toRange(entry);
    if (range === null) hosts.add(entry.toLowerCase().replace(/\.$/, ""));
    else allowed.addSubnet(range.address, range.prefix, range.family);
  }
  return {
    refusal(host, address) {
      const family = isIP(address);
      if (family === 0) return `${address} is not an IP address`;
      if (hosts.has(host.toLowerCase().replace(/\.$/, ""))) return null;
      if (allowed.check(address, family === 4 ? "ipv4" : "ipv6")) return null;
      const why = toNonPublicReason(address);
      return why === null ? null : `${host} resolves to ${address}, ${why}`;
    },
  };
}

/** Why `address` is not a public unicast address, or null when it is one. */
export function toNonPublicReason(address: string): string | null {
  const family = isIP(address);
  if (family === 4) return findReason(address, "ipv4", BLOCKED_V4);
  if (family !== 6) return "not an IP address";
  const embedded = toEmbeddedV4(address);
  if (embedded !== null) return toNonPublicReason(embedded);
  return findReason(address, "ipv6", BLOCKED_V6);
}

function findReason(
  address: string,
  type: "ipv4" | "ipv6",
  ranges: readonly [string, number, string][],
): string | null {
  for (const [network, prefix, reason] of ranges) {
    const list = new BlockList();
    list.addSubnet(network, prefix, type);
    if (list.check(address, type)) return reason;
  }
  return null;
}

/** The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`) or NAT64 (`64:ff9b::/96`) address. */
function toEmbeddedV4(address: string): string | null {
  const words = expandV6(address);
  if (words === null) return null;
  const mapped = words.slice(0, 5).every((word) => word === 0) && words[5] === 0xffff;
  const nat64 = words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0);
  if (!mapped && !nat64) return null;
  const high = words[6] ?? 0;
  const low = words[7] ?? 0;
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
}

/** The eight 16-bit words of an IPv6 address (a trailing dotted IPv4 part included). */
function expandV6(address: string): number[] | null {
  let text = address.toLowerCase().split("%")[0] ?? "";
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1] !== undefined) {
    const parts = dotted[1].split(".").map(Number);
    const [a = 0, b = 0, c = 0, d = 0] = parts;
    text = `${text.slice(0, -dotted[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? missing !== 0 : missing < 0) return null;
  const words = [...left, ...Array<string>(tail === undefined ? 0 : missing).fill("0"), ...right];
  return words.map((word) => Number.parseInt(word, 16));
}

function toRange(
  entry: string,
): { address: string; prefix: number; family: "ipv4" | "ipv6" } | null {
  const slash = entry.indexOf("/");
  const address = slash < 0 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0) return null;
  const max = family === 4 ? 32 : 128;
  const prefix = slash < 0 ? max : Number(entry.slice(slash + 1));
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return null;
  return { address, prefix, family: family === 4 ? "ipv4" : "ipv6" };
}

/** Whether `entry` is a valid allow-list entry: a host name, an IP address or a CIDR range. */
export function isAllowEntry(entry: string): boolean {
  if (entry.includes("/")) return toRange(entry) !== null;
  return (
    isIP(entry) !== 0 ||
    /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(entry)
  );
}
