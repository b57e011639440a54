// The event bus across instances (T5, S2): Redis pub/sub wakes subscribers on every instance.
// It carries only notifications; the database stays the source of truth for replay.
import { createRedisEventTarget } from "@graphql-yoga/redis-event-target";
import type { Logger } from "../logger.js";
import { PrefixedEventTarget } from "./prefixed-event-target.js";
import { closeRedisClient, connectWithin, logRedisLink, REDIS_CONNECT_TIMEOUT_MS, RedisUnavailableError, redisAddress } from "./redis-link-log.js";
import { awaitedPublish, createEventBus, type EventBus } from "./topics.js";
import type { Redis } from "ioredis";

export { RedisUnavailableError };

/**
 * `prefix` (REDIS_PREFIX) names every channel, so deployments sharing a Redis never hear each other.
 * With a `logger`, an outage of Redis is logged once, and its end once (redis-link-log.ts).
 * Redis must be there at start: unreachable, or not answering within `connectTimeoutMs` (a link
 * that connects and then hangs), the bus is not started — RedisUnavailableError, nothing left open.
 */
export async function createRedisEventBus(
  url: string,
  prefix = "",
  {
    logger,
    connectTimeoutMs = REDIS_CONNECT_TIMEOUT_MS,
    publishBacklog = PUBLISH_BACKLOG,
  }: { logger?: Logger; connectTimeoutMs?: number; publishBacklog?: number } = {},
): Promise<{ events: EventBus; close(): Promise<void> }> {
  // Loaded here: a server without REDIS_URL need not hold the Redis client.
  const { Redis } = await import("ioredis");
  const options = { lazyConnect: true, maxRetriesPerRequest: 3 };
  const publishClient = new Redis(url, options);
  const subscribeClient = new Redis(url, options);
  // Fail at start, naming the server, rather than on the first publish.
  try {
    await connectWithin([publishClient, subscribeClient], connectTimeoutMs);
  } catch (error) {
    throw new RedisUnavailableError(`Redis at ${redisAddress(publishClient)} (REDIS_URL) is unreachable: ${(error as Error).message}`);
  }
  if (logger) logRedisLink("event bus", [publishClient, subscribeClient], logger);
  const output = `${prefix}run:output:`;
  const wanted = `${prefix}run:output:wanted`;
  const redisTarget = createRedisEventTarget({
    publishClient: publishingTogether(publishClient, {
      atOnce: (channel, message) => awaitedPublish(channel.slice(prefix.length), message),
      droppable: (channel) => channel.startsWith(output) && !channel.startsWith(wanted),
      backlog: publishBacklog,
      onDropped: () =>
        logger?.warn("Redis is not taking the event bus's publishes: live run output is dropped until it does (subscribers resync)", {
          use: "event bus",
          redis: redisAddress(publishClient),
        }),
    }),
    subscribeClient: subscribingTogether(subscribeClient),
  });
  const events = createEventBus({ eventTarget: prefix ? new PrefixedEventTarget(redisTarget, prefix) : redisTarget, onGap: gapsOf(subscribeClient) });
  return {
    events,
    /** Within about a second even with Redis unreachable or its link hung; no reconnection is tried after it. */
    async close() {
      await Promise.all([closeRedisClient(publishClient), closeRedisClient(subscribeClient)]);
    },
  };
}

/**
 * The gaps of the subscribe client: its connection lost (a reset, a failover, Redis dropping a
 * subscriber whose output it could not keep) and ready again. ioredis subscribes every channel
 * again on its own before it says it is ready, and nothing fails: without this, subscribers would
 * never know that messages published in between were not heard — a run cancelled then, its
 * subscribers waiting on a run that has settled. Each gap goes to the bus's listener once ioredis
 * has sent the channels' SUBSCRIBE again (its 'ready'; Redis's answer may be a round trip later),
 * so what subscribers read then includes what they missed, but for that round trip.
 */
function gapsOf(subscribeClient: Redis): (listener: () => void) => void {
  return (listener) => {
    let lost = false;
    subscribeClient.on("close", () => (lost = true));
    subscribeClient.on("ready", () => {
      if (!lost) return;
      lost = false;
      listener();
    });
  };
}

/** The characters of publishes waiting for Redis past which live run output is dropped (publishingTogether). */
export const PUBLISH_BACKLOG = 16 * 1024 * 1024;

/**
 * The part of the backlog that snapshots (a call's output whole, sent to a subscriber who joined
 * mid-call) may take together: past it a snapshot is dropped, while pieces of output, a few
 * hundred characters each, still go. A snapshot larger than the share goes when no other snapshot
 * is waiting, and counts as the share: the pieces keep the rest of the backlog beside it, and what
 * waits passes the backlog by that one snapshot at most (one larger than the whole backlog, a call
 * with that much tool arguments, was dropped every time it was asked for, and never arrived).
 * Nothing tells the asker of a dropped one: a subscriber asks again, further and further apart,
 * for as long as its snapshot is missing (trace/output/run-output-updates.ts).
 * Without the share, one principal's snapshots of a call with large tool arguments, asked for over
 * and over, took the whole backlog, and every other principal's live output was dropped with them.
 */
export const WHOLE_SHARE = 0.5;

type PublishingOptions = {
  /** A publish someone waits on: sent at once. */
  atOnce: (channel: string, message: string) => boolean;
  /** A channel whose messages are never stored (live output), dropped past `backlog`. */
  droppable: (channel: string) => boolean;
  backlog: number;
  /** The first publish dropped since Redis last had nothing of this client's to answer. */
  onDropped: () => void;
};

/**
 * The client with its publishes issued in one turn of the event loop sent together, as one
 * pipeline (one socket write): when the pieces of many runs' answers land together, a hundred
 * publishes cost one write, not a hundred. Each batch goes as soon as the turn ends, whether or
 * not Redis answered the one before (ioredis's auto-pipelining would hold it until then, a round
 * trip and a turn of a busy loop later). The order is kept: one connection, written in turn.
 * A publish someone waits on (`atOnce`: a snapshot asked for, and its answer) does not wait for
 * the turn's end: it goes, with the publishes issued before it and those issued in the rest of
 * the same chain of promise callbacks (a worker answering a burst of asks one after another),
 * once that chain has run — before the loop takes its next callback. Queued as a microtask that
 * queues a tick: the microtask keeps it behind a SUBSCRIBE issued before it (subscribingTogether
 * sends those at a microtask), the tick waits for the chain.
 * What waits for Redis is bounded (a link that hangs answers nothing, and ioredis keeps every
 * publish until it does): past `backlog` characters, live run output is dropped — it is never
 * stored, and its subscribers resync from the trace and a snapshot. Snapshots take at most a
 * share of it (WHOLE_SHARE): the pieces of every other run still go while one run's large call is
 * asked for over and over. Every other topic is still sent: each announces a change committed to
 * the database, one per change (a run's status, a trace's span), and a subscriber that misses one
 * has no other way to hear of it than a gap of its own link (EventLinkLostError).
 */
function publishingTogether(client: Redis, { atOnce, droppable, backlog, onDropped }: PublishingOptions): Redis {
  let pending: [channel: string, message: string][] | undefined;
  let pendingSize = 0;
  /** The characters of the publishes Redis has not answered yet (sent or to be sent), and whether one was dropped since it last had none. */
  let waiting = 0;
  /** Of those, the characters of snapshots (a call's output whole, `atOnce` on a droppable channel). */
  let wholeWaiting = 0;
  let pendingWhole = 0;
  let dropping = false;
  let soon = false;
  const send = () => {
    soon = false;
    const batch = pending;
    if (!batch) return;
    const size = pendingSize;
    const whole = pendingWhole;
    pending = undefined;
    pendingSize = 0;
    pendingWhole = 0;
    const pipeline = client.pipeline();
    for (const [channel, message] of batch) pipeline.publish(channel, message);
    // A publish answers no one (as before, one lost with Redis gone is lost): a batch Redis refused
    // must not become an unhandled rejection that ends the process.
    pipeline
      .exec()
      .catch(() => undefined)
      .finally(() => {
        waiting -= size;
        wholeWaiting -= whole;
        if (waiting === 0) dropping = false;
      });
  };
  const publish = (channel: string, message: string) => {
    const awaited = atOnce(channel, message);
    // Which channel it is, only for what may be dropped: a snapshot (awaited), or anything once the backlog is full.
    const whole = awaited && droppable(channel);
    const share = backlog * WHOLE_SHARE;
    // What it counts for in the backlog: a snapshot larger than the share, the share.
    const size = whole ? Math.min(channel.length + message.length, share) : channel.length + message.length;
    const full = waiting + size > backlog;
    const pastShare = whole && wholeWaiting > 0 && wholeWaiting + size > share;
    // Past the snapshots' share a snapshot is dropped quietly: its asker asks again, and Redis may well be answering.
    if (pastShare || (full && (whole || droppable(channel)))) {
      if (full && !dropping) onDropped();
      dropping ||= full;
      return Promise.resolve(0);
    }
    waiting += size;
    pendingSize += size;
    if (whole) {
      wholeWaiting += size;
      pendingWhole += size;
    }
    if (!pending) {
      pending = [];
      setImmediate(send);
    }
    pending.push([channel, message]);
    if (!soon && awaited) {
      soon = true;
      queueMicrotask(() => process.nextTick(send));
    }
    return Promise.resolve(0);
  };
  return new Proxy(client, { get: (target, key, receiver) => (key === "publish" ? publish : Reflect.get(target, key, receiver)) });
}

type SubscriptionOp = { kind: "subscribe" | "unsubscribe"; channels: string[] };

/**
 * The subscribe client with the SUBSCRIBEs and UNSUBSCRIBEs issued together sent as one command
 * per run of the same kind (`SUBSCRIBE a b c`), in the order issued (a channel subscribed then
 * left ends unsubscribed, and the reverse subscribed): the subscriptions a burst of requests
 * starts together cost one write, not one each. "Together" is until a microtask queued with the
 * first of them runs (after the issuing code's synchronous part), not the end of the turn: a subscriber listens, then
 * reads what came before from the database, and a change committed right after that read may be
 * published by another process at once. Its SUBSCRIBE must already be on its way by then, as it
 * was when sent at once: it is written before the caller's next step after an await, and before
 * any publish issued after it (those go at the turn's end, or, for one someone waits on, at a
 * microtask queued after this one: publishingTogether), so the answer to a request published
 * right after subscribing (a snapshot asked for) is heard.
 */
export function subscribingTogether(client: Redis): Redis {
  let pending: SubscriptionOp[] | undefined;
  /** The channels someone listens on now, and those of them whose SUBSCRIBE the client gave up on. */
  const wanted = new Set<string>();
  const lost = new Set<string>();
  const send = () => {
    const ops = pending!;
    pending = undefined;
    // Nothing waits for Redis's answer: with Redis gone the client gives a command up after its
    // retries, which must not be an unhandled rejection that ends the process. A SUBSCRIBE given
    // up on is sent again once the client is connected again: the event target subscribes a
    // channel only for its first listener, so without it every later listener of that channel on
    // this instance would hear nothing for as long as any of them listens.
    for (const { kind, channels } of ops)
      client[kind](...channels).catch(() => {
        if (kind === "subscribe") for (const channel of channels) if (wanted.has(channel)) lost.add(channel);
      });
  };
  client.on("ready", () => {
    const again = [...lost].filter((channel) => wanted.has(channel));
    lost.clear();
    if (again.length > 0) queue("subscribe")(...again);
  });
  const queue =
    (kind: SubscriptionOp["kind"]) =>
    (...channels: string[]) => {
      for (const channel of channels) {
        if (kind === "subscribe") wanted.add(channel);
        else wanted.delete(channel);
      }
      if (!pending) {
        pending = [];
        queueMicrotask(send);
      }
      const last = pending.at(-1);
      if (last?.kind === kind) last.channels.push(...channels);
      else pending.push({ kind, channels });
      return Promise.resolve(0);
    };
  const subscribe = queue("subscribe");
  const unsubscribe = queue("unsubscribe");
  return new Proxy(client, {
    get: (target, key, receiver) => (key === "subscribe" ? subscribe : key === "unsubscribe" ? unsubscribe : Reflect.get(target, key, receiver)),
  });
}
