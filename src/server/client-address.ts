// The address a request comes from (TRUSTED_PROXIES). Every per-address protection — failed
// authentications, connections per client, the request rate of requests without a credential —
// counts a request against this address, over HTTP, SSE and graphql-ws alike.
//
// By default it is the TCP peer's. When the peer is a trusted proxy (an address or CIDR range
// TRUSTED_PROXIES lists), the X-Forwarded-For entries are walked from the right, the hop nearest
// the server first: each trusted address is a proxy that forwarded the request, and the first
// one that is not trusted is the client. A proxy appends the address it received the request
// from, so whatever a client wrote into the header itself lies to the left of that entry and is
// never reached. An entry that is not an address (`unknown`, an empty one, a host name) stops the
// walk: the request is the trusted hop's that reported it, the address of the last trusted one,
// so a malformed header can only put a request in its proxy's bucket, never in another client's.
// A chain of trusted addresses only is its left-most entry's. A peer that is not trusted is the
// client, whatever it sends: its X-Forwarded-For is ignored. `Forwarded` (RFC 7239) is not read.
import type { IncomingMessage, Server } from "node:http";
import { BlockList, isIPv4, isIPv6 } from "node:net";

/** An IPv4 address written into IPv6 (`::ffff:192.0.2.7`), as a dual-stack socket reports one. */
const MAPPED = /^::ffff:(?:0:)?(\d{1,3}(?:\.\d{1,3}){3})$/;

/**
 * An address as the server compares it: lower-cased, its zone (`%eth0`) removed, an IPv4-mapped
 * IPv6 address written as IPv4. Undefined when it is not an IPv4 or IPv6 address.
 */
export function plainAddress(text: string): string | undefined {
  const bare = text.trim().split("%")[0]!.toLowerCase();
  const mapped = MAPPED.exec(bare);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1];
  return isIPv4(bare) || isIPv6(bare) ? bare : undefined;
}

/**
 * An X-Forwarded-For entry's address: a bare IPv4 or IPv6 address, or one with a port as some
 * proxies write it (`192.0.2.7:51234`, `[2001:db8::7]:443`, `[2001:db8::7]`). Undefined otherwise.
 */
export function forwardedAddress(entry: string): string | undefined {
  const text = entry.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text);
  if (bracketed) return isIPv6(bracketed[1]!.split("%")[0]!) ? plainAddress(bracketed[1]!) : undefined;
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text);
  return plainAddress(withPort ? withPort[1]! : text);
}

export type ProxyEntry = { address: string; family: "ipv4" | "ipv6"; prefix: number };

/** A TRUSTED_PROXIES entry: an address (`10.0.0.7`, `::1`) or a CIDR range (`10.0.0.0/8`, `fd00::/8`). Undefined when it is neither. */
export function proxyEntryOf(entry: string): ProxyEntry | undefined {
  const match = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(entry.trim());
  if (!match) return undefined;
  const address = plainAddress(match[1]!);
  if (!address || match[1]!.includes("%")) return undefined;
  // An IPv4-mapped range (::ffff:10.0.0.0/104) is taken for the IPv4 range it maps.
  const mappedPrefix = isIPv4(address) && !isIPv4(match[1]!.trim()) ? 96 : 0;
  const family = isIPv4(address) ? "ipv4" : "ipv6";
  const width = family === "ipv4" ? 32 : 128;
  const prefix = match[2] === undefined ? width : Number(match[2]) - mappedPrefix;
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > width) return undefined;
  return { address, family, prefix };
}

/** The proxies whose X-Forwarded-For is believed (TRUSTED_PROXIES). */
export class TrustedProxies {
  private readonly list = new BlockList();
  readonly size: number;

  /** `entries` are TRUSTED_PROXIES's, checked when the configuration was read; one that is not an address or range throws. */
  constructor(entries: readonly string[] = []) {
    for (const entry of entries) {
      const parsed = proxyEntryOf(entry);
      if (!parsed) throw new Error(`TRUSTED_PROXIES: ${JSON.stringify(entry)} is neither an address nor a CIDR range`);
      this.list.addSubnet(parsed.address, parsed.prefix, parsed.family);
    }
    this.size = entries.length;
  }

  /** Whether the address is one of the trusted proxies'. */
  has(address: string | undefined): boolean {
    if (this.size === 0 || address === undefined) return false;
    const plain = plainAddress(address);
    return plain !== undefined && this.list.check(plain, isIPv4(plain) ? "ipv4" : "ipv6");
  }
}

/**
 * The client address of a request received from `peer` with the X-Forwarded-For `forwardedFor`
 * (repeated headers joined with commas, in order): see the top of this file.
 */
export function clientAddress(peer: string | undefined, forwardedFor: string | undefined, trusted: TrustedProxies): string | undefined {
  if (peer === undefined || forwardedFor === undefined || !trusted.has(peer)) return peer;
  const entries = forwardedFor.split(",");
  if (entries.every((entry) => entry.trim() === "")) return peer;
  let client = peer;
  for (let index = entries.length - 1; index >= 0; index -= 1) {
    const hop = forwardedAddress(entries[index]!);
    if (hop === undefined) return client;
    client = hop;
    if (!trusted.has(hop)) return hop;
  }
  return client;
}

/** Each request's client address, worked out once when the server received it. */
const addresses = new WeakMap<IncomingMessage, string | undefined>();

/** Works out the client address of every request and WebSocket upgrade the server receives, before anything else handles it. */
export function recordClientAddresses(server: Server, trusted: TrustedProxies): void {
  // Node joins repeated X-Forwarded-For headers into one value, in the order they came.
  const record = (request: IncomingMessage) => {
    const header = request.headers["x-forwarded-for"];
    addresses.set(request, clientAddress(request.socket?.remoteAddress, Array.isArray(header) ? header.join(",") : header, trusted));
  };
  server.prependListener("request", record);
  server.prependListener("upgrade", record);
}

/** The client address of a request the server received (its TCP peer's if none was worked out); undefined without one. */
export function clientAddressOf(request: IncomingMessage | undefined): string | undefined {
  if (!request) return undefined;
  return addresses.has(request) ? addresses.get(request) : request.socket?.remoteAddress;
}
