// The client address of a request (TRUSTED_PROXIES): a trusted peer's X-Forwarded-For is walked
// from the right to the first address that is not a trusted proxy; an entry that is not an
// address stops the walk at the last trusted hop; an untrusted peer's header is ignored.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { clientAddress, forwardedAddress, proxyEntryOf, TrustedProxies } from "../../src/server/client-address.js";
import { clientOf } from "../../src/server/client-connections.js";

describe("TRUSTED_PROXIES entries", () => {
  it("are IPv4 and IPv6 addresses and CIDR ranges; anything else is refused", () => {
    expect(proxyEntryOf("10.0.0.7")).toEqual({ address: "10.0.0.7", family: "ipv4", prefix: 32 });
    expect(proxyEntryOf(" 10.0.0.0/8 ")).toEqual({ address: "10.0.0.0", family: "ipv4", prefix: 8 });
    expect(proxyEntryOf("FD00::/8")).toEqual({ address: "fd00::", family: "ipv6", prefix: 8 });
    expect(proxyEntryOf("::1")).toEqual({ address: "::1", family: "ipv6", prefix: 128 });
    expect(proxyEntryOf("::ffff:10.0.0.0/104")).toEqual({ address: "10.0.0.0", family: "ipv4", prefix: 8 });
    expect(proxyEntryOf("0.0.0.0/0")).toEqual({ address: "0.0.0.0", family: "ipv4", prefix: 0 });
    for (const bad of [
      "10.0.0.0/33",
      "fd00::/129",
      "proxy.internal",
      "10.0.0.1/",
      "1.2.3",
      "10.0.0.0/-1",
      "fe80::1%eth0",
      "10.0.0.256",
      "[::1]",
      "10.0.0.1:80",
      "",
    ]) {
      expect(proxyEntryOf(bad), bad).toBeUndefined();
    }
  });

  it("match addresses in their ranges, IPv4-mapped peers as their IPv4 address", () => {
    const trusted = new TrustedProxies(["127.0.0.1", "10.0.0.0/8", "2001:db8:aa::/48", "::1"]);
    for (const address of ["127.0.0.1", "::ffff:127.0.0.1", "10.200.3.4", "::ffff:10.0.0.1", "2001:db8:aa:ffff::1", "2001:DB8:AA::9", "::1", "::1%lo"]) {
      expect(trusted.has(address), address).toBe(true);
    }
    for (const address of ["127.0.0.2", "11.0.0.1", "2001:db8:ab::1", "::2", "::ffff:11.0.0.1", "not an address", undefined]) {
      expect(trusted.has(address), String(address)).toBe(false);
    }
    expect(new TrustedProxies([]).has("127.0.0.1")).toBe(false);
  });

  it("are read from the environment: none by default, a bad entry refused by name", () => {
    expect(loadConfig({}).trustedProxies).toEqual([]);
    expect(loadConfig({ TRUSTED_PROXIES: " 127.0.0.1, 10.0.0.0/8,,fd00::/8 " }).trustedProxies).toEqual(["127.0.0.1", "10.0.0.0/8", "fd00::/8"]);
    expect(() => loadConfig({ TRUSTED_PROXIES: "127.0.0.1,proxy.internal" })).toThrow(
      /TRUSTED_PROXIES="127\.0\.0\.1,proxy\.internal": "proxy\.internal" is neither an IPv4 or IPv6 address nor a CIDR range/,
    );
    expect(() => loadConfig({ TRUSTED_PROXIES: "10.0.0.0/33, fd00::/200" })).toThrow(/"10\.0\.0\.0\/33", "fd00::\/200" are neither/);
  });

  it("refuse a range wider than a proxy network: every client in it could choose the address its limits count", () => {
    expect(() => loadConfig({ TRUSTED_PROXIES: "10.0.0.1,0.0.0.0/0" })).toThrow(/"0\.0\.0\.0\/0" is wider than a proxy network/);
    expect(() => loadConfig({ TRUSTED_PROXIES: "::/0, 128.0.0.0/1, ::ffff:0.0.0.0/96" })).toThrow(
      /"::\/0", "128\.0\.0\.0\/1", "::ffff:0\.0\.0\.0\/96" are wider/,
    );
    // The widest networks proxies live in, and public ranges a CDN publishes, are taken.
    expect(loadConfig({ TRUSTED_PROXIES: "10.0.0.0/8,fc00::/7,104.16.0.0/13,2400:cb00::/32" }).trustedProxies).toHaveLength(4);
  });
});

describe("X-Forwarded-For entries", () => {
  it("are addresses, with a port as some proxies write them", () => {
    expect(forwardedAddress(" 203.0.113.7 ")).toBe("203.0.113.7");
    expect(forwardedAddress("203.0.113.7:51234")).toBe("203.0.113.7");
    expect(forwardedAddress("[2001:db8::7]:443")).toBe("2001:db8::7");
    expect(forwardedAddress("[2001:DB8::7]")).toBe("2001:db8::7");
    expect(forwardedAddress("2001:db8::7")).toBe("2001:db8::7");
    expect(forwardedAddress("::ffff:203.0.113.7")).toBe("203.0.113.7");
    for (const bad of ["unknown", "", "proxy.internal", "203.0.113.256", "_hidden", "[203.0.113.7]", "203.0.113.7:port"])
      expect(forwardedAddress(bad), bad).toBeUndefined();
  });
});

describe("the client address", () => {
  const local = new TrustedProxies(["127.0.0.1"]);
  const tiers = new TrustedProxies(["127.0.0.1", "10.0.0.0/8", "fd00::/8"]);

  it("is the peer's when it is not trusted, whatever it forwards", () => {
    expect(clientAddress("198.51.100.4", "203.0.113.7", local)).toBe("198.51.100.4");
    expect(clientAddress("127.0.0.1", "203.0.113.7", new TrustedProxies())).toBe("127.0.0.1");
    expect(clientAddress("::ffff:127.0.0.2", "203.0.113.7", local)).toBe("::ffff:127.0.0.2");
  });

  it("is a trusted peer's own without X-Forwarded-For", () => {
    expect(clientAddress("127.0.0.1", undefined, local)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", "", local)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", " , ", local)).toBe("127.0.0.1");
  });

  it("is the right-most entry that is not a trusted proxy: what a client wrote left of it is never read", () => {
    expect(clientAddress("127.0.0.1", "203.0.113.7", local)).toBe("203.0.113.7");
    expect(clientAddress("::ffff:127.0.0.1", "203.0.113.7", local)).toBe("203.0.113.7");
    // `spoofed, real`: the client's own header, then what the proxy appended.
    expect(clientAddress("127.0.0.1", "198.51.100.9, 203.0.113.7", local)).toBe("203.0.113.7");
    expect(clientAddress("127.0.0.1", "garbage, 198.51.100.9, 203.0.113.7", local)).toBe("203.0.113.7");
    // Through two tiers of proxies: the load balancer's address is trusted, the client's is not.
    expect(clientAddress("127.0.0.1", "198.51.100.9, 203.0.113.7, 10.0.0.5", tiers)).toBe("203.0.113.7");
    expect(clientAddress("127.0.0.1", "198.51.100.9, 203.0.113.7, 10.0.0.5", local)).toBe("10.0.0.5");
    // Only trusted proxies: the farthest.
    expect(clientAddress("10.0.0.1", "10.0.0.9, 10.0.0.5", tiers)).toBe("10.0.0.9");
  });

  it("walks IPv6 entries and ranges alike", () => {
    expect(clientAddress("fd00::1", "2001:db8::1, fd00::2", tiers)).toBe("2001:db8::1");
    expect(clientAddress("::ffff:10.1.1.1", "2001:db8:5:6::1, [fd00::2]:443", tiers)).toBe("2001:db8:5:6::1");
    expect(clientAddress("fd12:3456::1", "[2001:DB8::9]:8443", tiers)).toBe("2001:db8::9");
    expect(clientOf(clientAddress("fd00::1", "2001:db8:5:6::1", tiers))).toBe("2001:db8:5:6::/64");
    // An IPv6 peer outside the ranges is not trusted.
    expect(clientAddress("fe00::1", "2001:db8::1", tiers)).toBe("fe00::1");
  });

  it("stops at an entry that is not an address: the request is the last trusted hop's", () => {
    expect(clientAddress("127.0.0.1", "203.0.113.7, unknown", local)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", "203.0.113.7,", local)).toBe("127.0.0.1");
    expect(clientAddress("127.0.0.1", "203.0.113.7, unknown, 10.0.0.5", tiers)).toBe("10.0.0.5");
    expect(clientAddress("fd00::1", "203.0.113.7, [fd00::zz]", tiers)).toBe("fd00::1");
  });
});
