// Dossier's pub/sub with a bound on each subscriber. A subscriber is handed every message it
// listens to and takes them at its own pace: a GraphQL subscription takes the next one only once
// its client has been sent the one before, so a client that stops reading lets messages pile up.
// Each subscription holds at most `subscriberLimit` messages it has not taken; one more drops
// them and ends it with SubscriberOverflowError at its next read, and it stops listening. The listener the
// event target calls never throws: a throw there would escape the publisher's dispatchEvent (in
// process) or the Redis client's message handler — an uncaught exception, the end of the process
// and of every other principal's streams.
import { Repeater } from "graphql-yoga";
import type { PubSub } from "graphql-yoga";

/** Messages a subscriber may leave untaken before its stream ends. */
export const SUBSCRIBER_LIMIT = 1000;

/** A subscriber fell further behind than the bus keeps: messages after those it holds were not kept for it. */
export class SubscriberOverflowError extends Error {
  override readonly name = "SubscriberOverflowError";
  constructor(
    readonly topic: string,
    readonly limit: number,
  ) {
    super(`The subscriber of ${topic} fell more than ${limit} messages behind; later messages were not kept for it.`);
  }
}

type ArgsByKey = { [key: string]: [] | [unknown] | [number | string, unknown] };

export type BoundedPubSubOptions = { eventTarget: EventTarget; subscriberLimit?: number };

/** The same publish and subscribe as graphql-yoga's createPubSub, each subscriber bounded. */
export function createBoundedPubSub<T extends ArgsByKey>({ eventTarget, subscriberLimit = SUBSCRIBER_LIMIT }: BoundedPubSubOptions): PubSub<T> {
  const limit = Math.max(1, subscriberLimit);
  const bus = {
    publish(routingKey: string, ...args: unknown[]) {
      const detail = args[1] ?? args[0] ?? null;
      const topic = args[1] === undefined ? routingKey : `${routingKey}:${String(args[0])}`;
      eventTarget.dispatchEvent(new CustomEvent(topic, { detail }));
    },
    subscribe(routingKey: string, id?: unknown) {
      const topic = id === undefined ? routingKey : `${routingKey}:${String(id)}`;
      return new Repeater<unknown>(async (push, stop) => {
        const queue: unknown[] = [];
        let overflow = false;
        let stopped = false;
        let wake: (() => void) | undefined;
        const listener = (event: Event) => {
          try {
            if (overflow) return;
            if (queue.length < limit) queue.push((event as CustomEvent<unknown>).detail);
            else {
              // What it holds is stale now: it is dropped, and the stream ends at the subscriber's next read.
              overflow = true;
              queue.length = 0;
            }
            wake?.();
          } catch {
            // Nothing here throws; were it to, the publisher must still not hear of it.
          }
        };
        eventTarget.addEventListener(topic, listener);
        void stop.then(() => {
          stopped = true;
          wake?.();
        });
        try {
          for (;;) {
            if (stopped) return;
            if (overflow) throw new SubscriberOverflowError(topic, limit);
            if (queue.length === 0) {
              await new Promise<void>((resolve) => (wake = resolve));
              wake = undefined;
              continue;
            }
            // Settles once the subscriber took the message (or left).
            await push(queue.shift());
          }
        } finally {
          eventTarget.removeEventListener(topic, listener);
        }
      });
    },
  };
  return bus as unknown as PubSub<T>;
}
