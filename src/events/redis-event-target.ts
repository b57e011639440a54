// The event bus across instances (T5, S2): Redis pub/sub wakes subscribers on every instance.
// It carries only notifications; the database stays the source of truth for replay.
import { createRedisEventTarget } from "@graphql-yoga/redis-event-target";
import { PrefixedEventTarget } from "./prefixed-event-target.js";
import { createEventBus, type EventBus } from "./topics.js";
import type { Redis } from "ioredis";

export class RedisUnavailableError extends Error {
  override name = "RedisUnavailableError";
}

/** `prefix` (REDIS_PREFIX) names every channel, so deployments sharing a Redis never hear each other. */
export async function createRedisEventBus(url: string, prefix = ""): Promise<{ events: EventBus; close(): Promise<void> }> {
  // Loaded here: a server without REDIS_URL need not hold the Redis client.
  const { Redis } = await import("ioredis");
  const options = { lazyConnect: true, maxRetriesPerRequest: 3 };
  const publishClient = new Redis(url, options);
  const subscribeClient = new Redis(url, options);
  // Fail at start, naming the server, rather than on the first publish.
  try {
    await Promise.all([publishClient.connect(), subscribeClient.connect()]);
  } catch (error) {
    publishClient.disconnect();
    subscribeClient.disconnect();
    const { host, port } = new URL(url);
    throw new RedisUnavailableError(`Redis at ${host}:${port || 6379} (REDIS_URL) is unreachable: ${(error as Error).message}`);
  }
  const redisTarget = createRedisEventTarget({ publishClient: publishingTogether(publishClient), subscribeClient });
  const events = createEventBus({ eventTarget: prefix ? new PrefixedEventTarget(redisTarget, prefix) : redisTarget });
  return {
    events,
    async close() {
      await Promise.allSettled([publishClient.quit(), subscribeClient.quit()]);
    },
  };
}

/**
 * The client with its publishes issued in one turn of the event loop sent together, as one
 * pipeline (one socket write): when the pieces of many runs' answers land together, a hundred
 * publishes cost one write, not a hundred. Each batch goes as soon as the turn ends, whether or
 * not Redis answered the one before (ioredis's auto-pipelining would hold it until then, a round
 * trip and a turn of a busy loop later). The order is kept: one connection, written in turn.
 */
function publishingTogether(client: Redis): Redis {
  let pending: [channel: string, message: string][] | undefined;
  const send = () => {
    const batch = pending!;
    pending = undefined;
    const pipeline = client.pipeline();
    for (const [channel, message] of batch) pipeline.publish(channel, message);
    // A publish answers no one (as before, one lost with Redis gone is lost): a batch Redis refused
    // must not become an unhandled rejection that ends the process.
    pipeline.exec().catch(() => undefined);
  };
  const publish = (channel: string, message: string) => {
    if (!pending) {
      pending = [];
      setImmediate(send);
    }
    pending.push([channel, message]);
    return Promise.resolve(0);
  };
  return new Proxy(client, { get: (target, key, receiver) => (key === "publish" ? publish : Reflect.get(target, key, receiver)) });
}
