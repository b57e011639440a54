// Which hosts and addresses a principal's outbound request may reach (http_fetch, HTTP MCP
// servers). Pure rules; the adapter that applies them to the address actually connected to is
// src/outbound/outbound-http.ts.
import { BlockList, isIP } from "node:net";

const internalV4 = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8], // "this" network, the unspecified address
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT (and some clouds' metadata)
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local: cloud metadata at 169.254.169.254
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, and the broadcast address
] as const) {
  internalV4.addSubnet(network, prefix, "ipv4");
}

const internalV6 = new BlockList();
for (const [network, prefix] of [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["64:ff9b:1::", 48], // local-use NAT64 (RFC 8215): a translator inside the operator's network
  ["100::", 64], // discard
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique-local (AWS metadata's fd00:ec2::254 among them)
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local
  ["ff00::", 8], // multicast
] as const) {
  internalV6.addSubnet(network, prefix, "ipv6");
}

/** The sixteen bytes of an IPv6 address (valid input only). */
function ipv6Bytes(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, "");
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)?.[1];
  if (dotted) {
    const [a, b, c, d] = dotted.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, -dotted.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? (text.split("::") as [string, string]) : [text, undefined];
  const groups = (part: string) => (part === "" ? [] : part.split(":").map((group) => parseInt(group, 16)));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const words = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return words.flatMap((word) => [word >> 8, word & 0xff]);
}

/** The IPv4 address an IPv6 address carries (mapped, translated, compatible, NAT64, 6to4), if any. */
function embeddedIPv4(address: string): string | undefined {
  const bytes = ipv6Bytes(address);
  const zero = (from: number, to: number) => bytes.slice(from, to).every((byte) => byte === 0);
  const quad = (at: number) => bytes.slice(at, at + 4).join(".");
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return quad(12); // ::ffff:a.b.c.d
  if (zero(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zero(10, 12)) return quad(12); // ::ffff:0:a.b.c.d
  if (zero(0, 12) && !zero(12, 16) && !(zero(12, 15) && bytes[15] === 1)) return quad(12); // ::a.b.c.d
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(4, 12)) return quad(12); // 64:ff9b::/96
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return quad(2); // 2002::/16
  return undefined;
}

/**
 * Loopback, private, carrier-grade NAT, link-local (cloud metadata), unique-local, reserved,
 * multicast and unspecified addresses, in IPv4 and IPv6 — and IPv6 forms carrying one of those
 * IPv4 addresses. Anything that is not an IP address counts as internal.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return internalV4.check(address, "ipv4");
  if (family !== 6) return true;
  const v4 = embeddedIPv4(address);
  return v4 !== undefined ? internalV4.check(v4, "ipv4") : internalV6.check(address.replace(/%.*$/, ""), "ipv6");
}

/** The port a URL reaches, its scheme's default when it names none. */
export const portOf = (url: URL): string => url.port || (url.protocol === "https:" ? "443" : "80");

/**
 * A host as the rules compare it: lower case, without the trailing dot of a fully qualified name
 * (`localhost.` is `localhost`, `Hooks.Example.` is `hooks.example`), IPv6 without brackets.
 */
export const normalHost = (host: string): string =>
  host
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");

/** A URL's host as an address or a normalised name (see normalHost). */
export const hostOf = (url: URL): string => normalHost(url.hostname);

/**
 * Whether an allow-list entry matches: `example.com` (any port), `example.com:8443` (that port
 * only), `*.example.org` (its subdomains, any depth, not example.org itself).
 */
function entryMatches(entry: string, host: string, port: string, wildcards: boolean): boolean {
  const [written, entryPort] = entry.toLowerCase().split(":") as [string, string | undefined];
  const pattern = written.replace(/\.$/, "");
  if (entryPort !== undefined && entryPort !== port) return false;
  if (pattern.startsWith("*.")) return wildcards && host.endsWith(pattern.slice(1));
  return host === pattern;
}

/** Whether a host and port are on an allow-list, wildcard entries included. */
export function hostAllowed(url: URL, allowedHosts: readonly string[]): boolean {
  return allowedHosts.some((entry) => entryMatches(entry, hostOf(url), portOf(url), true));
}

/**
 * Whether the operator named this host (and port) exactly, so it may lead inside the network. A
 * wildcard never does: `*.example.org` allows subdomains someone outside controls, and one of
 * them may resolve to 127.0.0.1 or a metadata address.
 */
export function namedExactly(host: string, port: string, allowedHosts: readonly string[]): boolean {
  return allowedHosts.some((entry) => entryMatches(entry, normalHost(host), port, false));
}

/** Why a principal may not send requests to `url`'s address as written, or null (names are checked when resolved). */
export function literalAddressRefusal(url: URL, allowedHosts: readonly string[], setting: string): string | null {
  const host = hostOf(url);
  if (!isIP(host) || !isInternalAddress(host) || namedExactly(host, portOf(url), allowedHosts)) return null;
  return internalAddressMessage(url.host, setting);
}

/**
 * The error codes a failed outbound request may report to the principal: the kind of failure,
 * never the addresses or text of the network it came from.
 */
export const FAILURE_CODE =
  /\b(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|UND_ERR_[A-Z_]+|ERR_TLS_[A-Z_]+|[A-Z_]*CERT[A-Z_]*)\b/;

/** The error code of a connection refused for its address (its message is internalAddressMessage's). */
export const INTERNAL_ADDRESS = "EINTERNALADDRESS";

export const internalAddressMessage = (host: string, setting: string): string =>
  `${host} is an address inside this server's network; only hosts an operator lists in ${setting} may be reached there`;

/**
 * What a caller is told of a host name that resolves inside the network and of one that does not
 * resolve at all: the same words for both, so that no refusal tells which internal names exist.
 */
export const unreachableNameMessage = (host: string, setting: string): string =>
  `${host} does not resolve to an address this server may reach; only hosts an operator lists in ${setting} may be reached inside its network`;
