// MAX_CONNECTIONS_PER_CLIENT counts an IPv6 client by its /64 prefix: a host given a /64 cannot
// open the cap again from each of its addresses. IPv4 clients, IPv4-mapped IPv6 ones included,
// are counted by their address.
import { EventEmitter } from "node:events";
import type { Server } from "node:http";
import { describe, expect, it } from "vitest";
import { capConnectionsPerClient, clientOf } from "../../src/server/client-connections.js";
import { bucketOf } from "../../src/server/rate-limit.js";

/** A connection as the server sees it: its remote address, and whether the cap closed it. */
class Connection extends EventEmitter {
  destroyed = false;
  constructor(readonly remoteAddress: string) {
    super();
  }
  destroy() {
    this.destroyed = true;
    this.emit("close");
  }
}

describe("the client a remote address counts as", () => {
  it("is an IPv6 address's /64, however it is written, and an IPv4 address itself", () => {
    const same64 = ["2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:DB8:1:2:0:0:0:9", "2001:0db8:0001:0002::abcd", "2001:db8:1:2::1.2.3.4"];
    expect(new Set(same64.map(clientOf))).toEqual(new Set(["2001:db8:1:2::/64"]));
    expect(clientOf("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(clientOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(clientOf("1::2:3:4:5:6:7")).toBe("1:0:2:3::/64");
    expect(clientOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(clientOf("::1")).toBe("0:0:0:0::/64");
    expect(clientOf("192.0.2.7")).toBe("192.0.2.7");
    expect(clientOf("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(clientOf("::ffff:192.0.2.8")).toBe("192.0.2.8");
    expect(clientOf(undefined)).toBe("unknown");
  });

  it("shares one request rate bucket across the /64 for requests without a credential", () => {
    expect(bucketOf(undefined, "2001:db8:1:2::1")).toBe(bucketOf(undefined, "2001:db8:1:2::2"));
    expect(bucketOf(undefined, "2001:db8:1:2::1")).not.toBe(bucketOf(undefined, "2001:db8:1:3::1"));
    expect(bucketOf(undefined, "::ffff:192.0.2.7")).toBe(bucketOf(undefined, "192.0.2.7"));
  });
});

describe("MAX_CONNECTIONS_PER_CLIENT", () => {
  it("closes a connection past the cap from any address of the same /64; another /64 and IPv4 addresses have their own", () => {
    const server = new EventEmitter();
    capConnectionsPerClient(server as unknown as Server, { maxPerClient: 2, requestTimeoutMs: 30_000 });
    const open = (address: string) => {
      const connection = new Connection(address);
      server.emit("connection", connection);
      return connection;
    };

    const [a, b, c] = [open("2001:db8:1:2::1"), open("2001:db8:1:2::2"), open("2001:db8:1:2:aaaa::3")];
    expect([a.destroyed, b.destroyed, c.destroyed]).toEqual([false, false, true]);
    // Another /64 is another client.
    expect([open("2001:db8:1:3::1").destroyed, open("2001:db8:1:3::2").destroyed]).toEqual([false, false]);
    // A connection closing gives its /64 its place back.
    a.destroy();
    expect(open("2001:db8:1:2::4").destroyed).toBe(false);
    expect(open("2001:db8:1:2::5").destroyed).toBe(true);

    // IPv4, whether it arrives mapped into IPv6 or not, is counted by its address.
    expect([open("192.0.2.7").destroyed, open("::ffff:192.0.2.7").destroyed, open("192.0.2.7").destroyed]).toEqual([false, false, true]);
    expect(open("192.0.2.8").destroyed).toBe(false);
  });
});
