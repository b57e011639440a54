// Connections per client address (issue 36): one address holds at most `maxPerClient` open
// connections (requests, SSE streams and WebSockets alike); one more is closed as soon as it
// opens. Together with the server's request timeout — a request whose headers and body have not
// all arrived in time gets 408 and its connection closed — a client sending bodies slowly holds
// a bounded number of connections for a bounded time.
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

/** Counts each address's open connections and closes those past the cap. */
export function capConnectionsPerClient(server: Server, limits: ConnectionLimits): void {
  const open = new Map<string, number>();
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "unknown";
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
