/**
 * Which addresses the fetcher may connect to. Public unicast addresses only, unless the
 * configured allow-list names the host (exact, case-insensitive) or a CIDR range holding the
 * address: loopback, private (RFC 1918, unique-local), carrier-grade NAT, link-local (which
 * holds the cloud metadata address 169.254.169.254), multicast, documentation, benchmarking and
 * reserved ranges are refused. IPv4-mapped and well-known NAT64 (`64:ff9b::/96`) addresses are
 * judged by the IPv4 address inside them; local-use NAT64 (`64:ff9b:1::/48`) and 6to4
 * (`2002::/16`) addresses are refused when the IPv4 address inside them is not public (and
 * judged as IPv6 otherwise); IPv4-compatible (`::/96`) and IPv4-translated (`::ffff:0:0/96`)
 * addresses are refused outright (deprecated or not routed on the internet, and some stacks
 * deliver them to the IPv4 address inside).
 */
import { BlockList, isIP } from "node:net";

export interface AddressPolicy {
  /**
   * Why `address` (which `host` resolved to) may not be reached, or null when it may.
   * `useAllowList` false: only public addresses, whatever the allow-list says.
   */
  refusal(host: string, address: string, useAllowList?: boolean): string | null;
  /** Whether the allow-list names `host` or holds `address`. */
  allows(host: string, address: string): boolean;
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
  const policy: AddressPolicy = {
    refusal(host, address, useAllowList = true) {
      const family = isIP(address);
      if (family === 0) return `${address} is not an IP address`;
      if (useAllowList && policy.allows(host, address)) return null;
      const why = toNonPublicReason(address);
      if (why === null) return null;
      const note =
        !useAllowList && policy.allows(host, address)
          ? " (allowHosts applies to the URL asked for and to redirects from allowed hosts, not to redirects from public pages)"
          : "";
      return `${host} resolves to ${address}, ${why}${note}`;
    },
    allows(host, address) {
      if (hosts.has(host.toLowerCase().replace(/\.$/, ""))) return true;
      const family = isIP(address);
      return family !== 0 && allowed.check(address, family === 4 ? "ipv4" : "ipv6");
    },
  };
  return policy;
}

/** Why `address` is not a public unicast address, or null when it is one. */
export function toNonPublicReason(address: string): string | null {
  const family = isIP(address);
  if (family === 4) return findReason(address, "ipv4", BLOCKED_V4);
  if (family !== 6) return "not an IP address";
  const embedded = toEmbeddedV4(address);
  for (const v4 of embedded.addresses) {
    const why = toNonPublicReason(v4);
    if (why !== null) return why;
  }
  if (embedded.only) return null;
  const listed = findReason(address, "ipv6", BLOCKED_V6);
  if (listed !== null) return listed;
  // By word, not with BlockList: Node's BlockList does not match ::ffff:0:0/96 (Node 24.21).
  const words = expandV6(address) ?? [];
  const zeros = (count: number): boolean => words.slice(0, count).every((word) => word === 0);
  if (zeros(6)) return "an IPv4-compatible address (deprecated)";
  if (zeros(4) && words[4] === 0xffff && words[5] === 0) return "an IPv4-translated address";
  return null;
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

/**
 * The IPv4 addresses an IPv6 address may carry: the last 32 bits of an IPv4-mapped
 * (`::ffff:a.b.c.d`) or NAT64 address (`64:ff9b::/96`, and `64:ff9b:1::/48`, whose operator may
 * also place it after the /48 as RFC 6052 lays out), bits 16 to 47 of a 6to4 address
 * (`2002::/16`). `only`: the IPv4 address alone decides (mapped, well-known NAT64).
 */
function toEmbeddedV4(address: string): { addresses: string[]; only: boolean } {
  const words = expandV6(address);
  if (words === null) return { addresses: [], only: false };
  const [w0, w1, w2, w3 = 0, w4 = 0, w5 = 0, w6 = 0, w7 = 0] = words;
  const v4 = (high: number, low: number): string =>
    [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
  const mapped = words.slice(0, 5).every((word) => word === 0) && w5 === 0xffff;
  const nat64 = w0 === 0x64 && w1 === 0xff9b && words.slice(2, 6).every((w) => w === 0);
  if (mapped || nat64) return { addresses: [v4(w6, w7)], only: true };
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 1) {
    // Bits 48 to 95 all zero: a /96 prefix; otherwise a shorter one, and any non-zero tail too.
    const tail = w6 !== 0 || w7 !== 0 ? [v4(w6, w7)] : [];
    return w3 === 0 && w4 === 0 && w5 === 0
      ? { addresses: [v4(w6, w7)], only: false }
      : { addresses: [v4(w3, ((w4 & 0xff) << 8) | (w5 >> 8)), ...tail], only: false };
  }
  if (w0 === 0x2002) return { addresses: [v4(w1 ?? 0, w2 ?? 0)], only: false };
  return { addresses: [], only: false };
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
