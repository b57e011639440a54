// The requests that carry a subscription over HTTP (SSE), so the server that received them can
// cut their connections when it closes, rather than holding its close() until the grace period
// ends. A cut, not a `complete`: a subscriber whose server goes away (a deploy, a restart) must
// not read that its stream ended, but that its connection did, and resume from the last event it
// has, on this server when it is back or on another instance. Requests are remembered weakly and
// only cut while still in flight (closing.ts), so one server cuts only its own: the same API may
// be served again (a restarted server), and its new subscriptions run as before.
import type { IncomingMessage } from "node:http";
import type { Plugin } from "graphql-yoga";

export class EventStreams {
  readonly #carrying = new WeakSet<object>();

  /** Marks the Node request (Yoga's server context) of every subscription served over HTTP. */
  plugin(): Plugin {
    return {
      onSubscribe: ({ args }) => {
        const request = (args.contextValue as { req?: unknown }).req;
        if (typeof request === "object" && request !== null) this.#carrying.add(request);
      },
    };
  }

  /** Cuts, at once, the connections of those of these requests that carry a subscription. */
  cut(requests: Iterable<IncomingMessage>): void {
    for (const request of requests) if (this.#carrying.has(request)) request.socket.destroy();
  }
}
