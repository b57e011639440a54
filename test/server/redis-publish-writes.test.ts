// Many runs' pieces land together: the publishes one instance issues in one tick reach Redis in
// one socket write, not one write each, and every subscriber still hears them all in the order
// they were published. Real Redis (the machine's, shared by every test).
import { Socket } from "node:net";
import { describe, expect, inject, it, vi } from "vitest";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const PUBLISHES = 100;

describe("publishes to Redis", () => {
  it.runIf(redisUrl || process.env.CI)(`sends ${PUBLISHES} publishes of one tick in one write, delivered in order`, async () => {
    if (!redisUrl) throw new Error("Redis is required on CI (REDIS_URL)");
    const prefix = `test-${process.pid}-${Date.now()}:writes:`;
    const [sender, receiver] = await Promise.all([createRedisEventBus(redisUrl, prefix), createRedisEventBus(redisUrl, prefix)]);
    const redisPort = Number(new URL(redisUrl).port || 6379);
    const write = vi.spyOn(Socket.prototype, "write");
    try {
      const heard: string[] = [];
      void (async () => {
        for await (const change of receiver.events.subscribe("mcp:changed")) heard.push(change.principalId);
      })();
      await allowTimeFor("the subscription to reach Redis", 300);
      write.mockClear();
      for (let i = 0; i < PUBLISHES; i += 1) sender.events.publish("mcp:changed", { principalId: `p${i}`, at: "now" });
      await waitUntil(() => (heard.length === PUBLISHES ? true : undefined), 5_000);
      const writesToRedis = write.mock.contexts.filter((socket) => (socket as Socket).remotePort === redisPort).length;
      // One write per publish before: 100.
      expect(writesToRedis).toBeLessThanOrEqual(2);
      expect(heard).toEqual(Array.from({ length: PUBLISHES }, (_, i) => `p${i}`));
    } finally {
      write.mockRestore();
      await Promise.all([sender.close(), receiver.close()]);
    }
  });
});
