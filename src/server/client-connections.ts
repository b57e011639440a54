// Connections per client address (issue 36): one address holds at most `maxPerClient` open
// connections (requests, SSE streams and WebSockets alike); one more is closed as soon as it
// opens. Together with the server's request timeout — a request whose headers and body have not
// all arrived in time gets 408 and its connection closed — a client sending bodies slowly holds
// a bounded number of connections for a bounded time. An IPv6 client is counted by its /64
// prefix, the block one host or one site is given: a host holding a /64 cannot open the cap again
// from each of its addresses. IPv4 clients, IPv4-mapped IPv6 ones included, are counted by address.
import type { Server, ServerOptions } from "node:http";
import type { Socket } from "node:net";

export type ConnectionLimits = {
  /** Open connections one client address may hold (MAX_CONNECTIONS_PER_CLIENT). */
  maxPerClient: number;
  /** How long a request's headers and body may take to arrive (REQUEST_TIMEOUT_MS). */
  requestTimeoutMs: number;
};

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { maxPerClient: 256, requestTimeoutMs: 30_000 };

/** Node's own settings for the limits: the request timeout, checked often enough to hold. */
export function serverOptions(limits: ConnectionLimits): ServerOptions {
  return {
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, limits.requestTimeoutMs / 4)),
  };
}

/**
 * The client a remote address counts as: an IPv4 address itself (`::ffff:` removed), an IPv6
 * one its /64 prefix, written in full (`2001:db8:0:1::/64`).
 */
export function clientOf(address: string | undefined): string {
  if (!address) return "unknown";
  const bare = address.split("%")[0]!.toLowerCase();
  const mapped = /^::ffff:(?:0:)?(\d{1,3}(?:\.\d{1,3}){3})$/.exec(bare);
  if (mapped) return mapped[1]!;
  if (!bare.includes(":")) return bare;
  const [head = "", tail] = bare.split("::");
  const groupsOf = (part: string) => (part === "" ? [] : part.split(":").flatMap((group) => (group.includes(".") ? ["0", "0"] : [group])));
  const [before, after] = [groupsOf(head), tail === undefined ? [] : groupsOf(tail)];
  const groups = [...before, ...Array<string>(Math.max(0, 8 - before.length - after.length)).fill("0"), ...after];
  return `${groups
    .slice(0, 4)
    .map((group) => (Number.parseInt(group, 16) || 0).toString(16))
    .join(":")}::/64`;
}

/** Counts each client's open connections (an IPv6 /64 is one client) and closes those past the cap. */
export function capConnectionsPerClient(server: Server, limits: ConnectionLimits): void {
  const open = new Map<string, number>();
  server.on("connection", (socket: Socket) => {
    const address = clientOf(socket.remoteAddress);
    const count = (open.get(address) ?? 0) + 1;
    if (count > limits.maxPerClient) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
  });
}
