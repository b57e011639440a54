// The event bus across instances (T5, S2): Redis pub/sub wakes subscribers on every instance.
// It carries only notifications; the database stays the source of truth for replay.
import { createRedisEventTarget } from "@graphql-yoga/redis-event-target";
import { PrefixedEventTarget } from "./prefixed-event-target.js";
import { createEventBus, type EventBus } from "./topics.js";

export class RedisUnavailableError extends Error {
  override name = "RedisUnavailableError";
}

/** `prefix` (REDIS_PREFIX) names every channel, so deployments sharing a Redis never hear each other. */
export async function createRedisEventBus(url: string, prefix = ""): Promise<{ events: EventBus; close(): Promise<void> }> {
  // Loaded here: a server without REDIS_URL need not hold the Redis client.
  const { Redis } = await import("ioredis");
  const options = { lazyConnect: true, maxRetriesPerRequest: 3 };
  // Publishes issued in one tick go out as one write (auto-pipelining): when the pieces of many
  // runs' answers land together, a hundred publishes cost one socket write, not a hundred. Order
  // is kept: a pipeline sends its commands in the order they were issued.
  const publishClient = new Redis(url, { ...options, enableAutoPipelining: true });
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
  const redisTarget = createRedisEventTarget({ publishClient, subscribeClient });
  const events = createEventBus({ eventTarget: prefix ? new PrefixedEventTarget(redisTarget, prefix) : redisTarget });
  return {
    events,
    async close() {
      await Promise.allSettled([publishClient.quit(), subscribeClient.quit()]);
    },
  };
}
