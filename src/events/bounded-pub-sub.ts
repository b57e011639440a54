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

/**
 * A subscription ended because messages may have been published that it did not hear: whoever
 * listened reads what they announce from the database (or listens again and tells its client to resync).
 */
export class MissedEventsError extends Error {}

/** A subscriber fell further behind than the bus keeps: messages after those it holds were not kept for it. */
export class SubscriberOverflowError extends MissedEventsError {
  override readonly name = "SubscriberOverflowError";
  constructor(
    readonly topic: string,
    readonly limit: number,
  ) {
    super(`The subscriber of ${topic} fell more than ${limit} messages behind; later messages were not kept for it.`);
  }
}

/**
 * The bus's subscriber link to the other instances was lost and is back (Redis failed over, a
 * connection reset, Redis dropped a slow subscriber): what was published meanwhile was not heard.
 * Given after the messages heard before it. A publish another instance lost on its own link is
 * not told (it is logged there).
 */
export class EventLinkLostError extends MissedEventsError {
  override readonly name = "EventLinkLostError";
  constructor(readonly topic: string) {
    super(`The event bus lost its link while listening to ${topic}; messages published meanwhile may not have been heard.`);
  }
}

type ArgsByKey = { [key: string]: [] | [unknown] | [number | string, unknown] };

export type BoundedPubSubOptions = {
  eventTarget: EventTarget;
  subscriberLimit?: number;
  /** Registers the bus's listener for its link's gaps: each ends every subscription open then (EventLinkLostError). */
  onGap?: (listener: () => void) => void;
};

/** The same publish and subscribe as graphql-yoga's createPubSub, each subscriber bounded. */
export function createBoundedPubSub<T extends ArgsByKey>({ eventTarget, subscriberLimit = SUBSCRIBER_LIMIT, onGap }: BoundedPubSubOptions): PubSub<T> {
  const limit = Math.max(1, subscriberLimit);
  /** Each open subscription's way of hearing of a gap. */
  const open = new Set<() => void>();
  onGap?.(() => {
    for (const missed of [...open]) missed();
  });
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
        let gap = false;
        let stopped = false;
        let wake: (() => void) | undefined;
        const missed = () => {
          gap = true;
          wake?.();
        };
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
        open.add(missed);
        void stop.then(() => {
          stopped = true;
          wake?.();
        });
        try {
          for (;;) {
            if (stopped) return;
            if (overflow) throw new SubscriberOverflowError(topic, limit);
            if (queue.length === 0) {
              if (gap) throw new EventLinkLostError(topic);
              await new Promise<void>((resolve) => (wake = resolve));
              wake = undefined;
              continue;
            }
            // Settles once the subscriber took the message (or left).
            await push(queue.shift());
          }
        } finally {
          open.delete(missed);
          eventTarget.removeEventListener(topic, listener);
        }
      });
    },
  };
  return bus as unknown as PubSub<T>;
}
