// Connections per client address (issue 36): one address holds at most `maxPerClient` open
// connections (requests, SSE streams and WebSockets alike); one more is closed as soon as it
// opens. Together with the server's request timeout — a request whose headers and body have not
// all arrived in time gets 408 and its connection closed — a client sending bodies slowly holds
// a bounded number of connections for a bounded time. An IPv6 client is counted by its /64
// prefix, the block one host or one site is given: a host holding a /64 cannot open the cap again
// from each of its addresses. IPv4 clients, IPv4-mapped IPv6 ones included, are counted by address.
// A trusted proxy's connections (TRUSTED_PROXIES) are not counted as its own: each one carries
// the requests of many clients, one after another. Instead each request it forwards (an SSE
// stream until it ends) and each WebSocket counts against its client's address
// (client-address.ts) while it is open; one more is answered 429 (the upgrade refused with 429).
import type { IncomingMessage, RequestListener, Server, ServerOptions } from "node:http";
import type { Socket } from "node:net";
import { clientAddressOf, type TrustedProxies } from "./client-address.js";

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

export const TOO_MANY_CONNECTIONS = "Too many open connections from this address";

/** How a server's connections are counted per client: the cap, applied as each one opens. */
export type ClientConnections = {
  /** `handler`, with each request a trusted proxy forwards counted against its client while it is open. */
  forwarded(handler: RequestListener): RequestListener;
  /** Whether a WebSocket upgrade may go on: one a trusted proxy forwards is counted against its client until its socket closes. */
  upgradeAllowed(request: IncomingMessage): boolean;
};

/**
 * Counts each client's open connections (an IPv6 /64 is one client) and closes those past the
 * cap; a trusted proxy's requests and WebSockets are counted against their clients instead.
 */
export function capConnectionsPerClient(server: Server, limits: ConnectionLimits, trusted?: TrustedProxies): ClientConnections {
  const open = new Map<string, number>();
  /** A place for one more connection of the client, and how to give it back; undefined at the cap. */
  const hold = (address: string | undefined): (() => void) | undefined => {
    const client = clientOf(address);
    const count = (open.get(client) ?? 0) + 1;
    if (count > limits.maxPerClient) return undefined;
    open.set(client, count);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (open.get(client) ?? 1) - 1;
      if (left === 0) open.delete(client);
      else open.set(client, left);
    };
  };
  const proxied = (socket: Socket | undefined) => trusted?.has(socket?.remoteAddress) === true;
  server.on("connection", (socket: Socket) => {
    if (proxied(socket)) return;
    const release = hold(socket.remoteAddress);
    if (!release) {
      socket.destroy();
      return;
    }
    socket.once("close", release);
  });
  return {
    forwarded: (handler) => (request, response) => {
      if (!proxied(request.socket)) return handler(request, response);
      const release = hold(clientAddressOf(request));
      if (!release) {
        const body = JSON.stringify({ errors: [{ message: TOO_MANY_CONNECTIONS, extensions: { code: "TOO_MANY_CONNECTIONS" } }] });
        response.writeHead(429, { "content-type": "application/json; charset=utf-8" }).end(body);
        return;
      }
      // A response queued behind others on a connection that closes never emits its own `close`
      // (pipelined requests): the connection's close gives the place back too (release runs once).
      const socket = request.socket;
      const released = () => {
        socket.off("close", released);
        response.off("close", released);
        release();
      };
      response.once("close", released);
      if (socket.destroyed) released();
      else socket.once("close", released);
      return handler(request, response);
    },
    upgradeAllowed(request) {
      if (!proxied(request.socket)) return true;
      const release = hold(clientAddressOf(request));
      if (!release) return false;
      if (request.socket.destroyed) release();
      else request.socket.once("close", release);
      return true;
    },
  };
}
