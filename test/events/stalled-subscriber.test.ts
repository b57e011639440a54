// A subscriber that stops taking its messages while they keep coming: the bus keeps at most
// SUBSCRIBER_LIMIT of them for it, then ends its stream with SubscriberOverflowError. Publishing
// never throws, nothing escapes as an uncaught exception (which ends a server process), and every
// other subscriber of the topic keeps hearing every message. In process and across Redis.
import { describe, expect, inject, it } from "vitest";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import { createEventBus, type EventBus, SUBSCRIBER_LIMIT, SubscriberOverflowError } from "../../src/events/topics.js";
import { countUncaughtWhile } from "../support/uncaught.js";
import { waitUntil } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const MESSAGES = 1_500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function stalledAmongReaders(events: EventBus) {
  const heard: string[] = [];
  const reader = events.subscribe("mcp:changed");
  void (async () => {
    for await (const change of reader) heard.push(change.principalId);
  })();
  const stalled = events.subscribe("mcp:changed")[Symbol.asyncIterator]();
  // Its first read starts its listening; it takes nothing after that.
  const first = stalled.next();
  await sleep(300);
  const uncaught = await countUncaughtWhile(async () => {
    for (let i = 0; i < MESSAGES; i += 1) {
      events.publish("mcp:changed", { principalId: `p${i}`, at: "now" });
      // Paced: 20 messages, then the readers have a moment to take them.
      if (i % 20 === 19) await sleep(5);
    }
    await waitUntil(() => (heard.length === MESSAGES ? true : undefined), 10_000);
  });
  expect(uncaught).toEqual([]);
  expect(heard).toEqual(Array.from({ length: MESSAGES }, (_, i) => `p${i}`));
  // The stalled subscriber had its first message, then its stream ends: the rest were not kept.
  expect((await first).value).toEqual({ principalId: "p0", at: "now" });
  const ended = await stalled.next().then(
    () => "a message",
    (error: unknown) => error,
  );
  expect(ended).toBeInstanceOf(SubscriberOverflowError);
  expect((ended as SubscriberOverflowError).limit).toBe(SUBSCRIBER_LIMIT);
  void reader.return();
}

describe("a subscriber that stops taking its messages", () => {
  it("in process: ends with SubscriberOverflowError, the others hear everything, nothing is thrown", async () => {
    await stalledAmongReaders(createEventBus());
  });

  it.runIf(redisUrl || process.env.CI)("across Redis: the same", async () => {
    if (!redisUrl) throw new Error("Redis is required on CI (REDIS_URL)");
    const bus = await createRedisEventBus(redisUrl, `test-${process.pid}-${Date.now()}:stalled:`);
    try {
      await stalledAmongReaders(bus.events);
    } finally {
      await bus.close();
    }
  });
});
