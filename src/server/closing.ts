// How the HTTP server closes: it stops accepting connections, cuts the connections of the event
// streams it serves (their subscribers resume elsewhere or later: event-streams.ts), lets the
// other requests in flight finish, and then closes every connection left at once — idle
// keep-alive ones, and ones that never sent a request, which Node's own close() leaves open (it counts a new connection as busy until its headers time out),
// so that a client's spare connection held close() until the client itself let it go.
// A request that has not finished within the grace period has its socket closed.
import type { IncomingMessage, Server } from "node:http";

export type Closing = { close(): Promise<void> };

export function closingOf(
  httpServer: Server,
  { cutStreams, graceMs = 5_000 }: { cutStreams: (requests: Iterable<IncomingMessage>) => void; graceMs?: number },
): Closing {
  const inFlight = new Set<IncomingMessage>();
  let drained: (() => void) | undefined;
  httpServer.on("request", (request: IncomingMessage, response) => {
    inFlight.add(request);
    response.once("close", () => {
      inFlight.delete(request);
      if (inFlight.size === 0) drained?.();
    });
  });
  return {
    async close() {
      const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
      const finished = new Promise<void>((resolve) => {
        drained = resolve;
      });
      if (inFlight.size === 0) drained?.();
      cutStreams([...inFlight]);
      const timer = setTimeout(() => drained?.(), graceMs);
      await finished;
      clearTimeout(timer);
      httpServer.closeAllConnections();
      await closed;
    },
  };
}
