// Deployments sharing one Redis never hear each other: every channel carries REDIS_PREFIX (by
// default derived from the database name), so an event published by one deployment reaches its
// own instances and no other deployment's; the rate-limit buckets carry it too. Real Redis (the machine's, shared by every test).
import { describe, expect, inject, it } from "vitest";
import { Redis } from "ioredis";
import { openAuthFailures, openRateLimits } from "../../src/compose/infrastructure.js";
import { loadConfig } from "../../src/config.js";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import type { EventBus } from "../../src/events/topics.js";
import { silentLogger } from "../../src/logger.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

const redisUrl = inject("redisUrl");

describe("REDIS_PREFIX", () => {
  it("derives a default from the database name, and reads an explicit one", () => {
    expect(loadConfig({ DATABASE_URL: "postgresql://db-a.internal:5432/dossier_prod" }).redisPrefix).toBe("dossier:dossier_prod:");
    // Another host name for the same database: the same deployment, the same channels.
    expect(loadConfig({ DATABASE_URL: "postgresql://10.0.0.7/dossier_prod" }).redisPrefix).toBe("dossier:dossier_prod:");
    expect(loadConfig({ DATABASE_URL: "postgresql://db/dossier_staging" }).redisPrefix).toBe("dossier:dossier_staging:");
    expect(loadConfig({ REDIS_PREFIX: "team-a:" }).redisPrefix).toBe("team-a:");
    expect(() => loadConfig({ REDIS_PREFIX: "has space" })).toThrow(/REDIS_PREFIX="has space": must be letters/);
  });

  it.runIf(redisUrl || process.env.CI)("delivers an event to its own deployment's instances and to no other deployment sharing the Redis", async () => {
    if (!redisUrl) throw new Error("Redis is required on CI (REDIS_URL)");
    const unique = `test-${process.pid}-${Date.now()}`;
    const buses = await Promise.all([`${unique}:a:`, `${unique}:a:`, `${unique}:b:`].map((prefix) => createRedisEventBus(redisUrl, prefix)));
    const [sender, sameDeployment, otherDeployment] = buses;
    try {
      const heard = { same: [] as string[], other: [] as string[] };
      const listen = async (events: EventBus, into: string[]) => {
        for await (const change of events.subscribe("mcp:changed")) into.push(change.principalId);
      };
      void listen(sameDeployment!.events, heard.same);
      void listen(otherDeployment!.events, heard.other);
      await allowTimeFor("both subscriptions to reach Redis", 300);
      sender!.events.publish("mcp:changed", { principalId: "p1", at: new Date().toISOString() });
      await waitUntil(() => (heard.same.length > 0 ? true : undefined), 5_000);
      await allowTimeFor("the other deployment to hear it, if it could", 300);
      expect(heard).toEqual({ same: ["p1"], other: [] });
    } finally {
      await Promise.all(buses.map((bus) => bus.close()));
    }
  });

  it.runIf(redisUrl || process.env.CI)("keeps each deployment's request-rate and failed-authentication buckets under its own prefix", async () => {
    if (!redisUrl) throw new Error("Redis is required on CI (REDIS_URL)");
    const unique = `test-${process.pid}-${Date.now()}`;
    const env = (prefix: string) => ({
      REDIS_URL: redisUrl,
      REDIS_PREFIX: prefix,
      RATE_LIMIT_PER_MINUTE: "1",
      RATE_LIMIT_BURST: "2",
      AUTH_FAILURES_BURST: "2",
    });
    const [a, b] = [loadConfig(env(`${unique}:a:`)), loadConfig(env(`${unique}:b:`))];
    const buckets = [await openRateLimits(a, silentLogger), await openRateLimits(b, silentLogger), await openAuthFailures(a, silentLogger)];
    const [rateA, rateB, failuresA] = buckets;
    const redis = new Redis(redisUrl);
    const client = `client-${unique}`;
    try {
      // Deployment a spends the client's burst; deployment b, sharing the Redis, still has its own.
      const taken = [await rateA!.take(client), await rateA!.take(client), await rateA!.take(client), await rateB!.take(client)];
      expect(taken.map((decision) => decision.allowed)).toEqual([true, true, false, true]);
      await failuresA!.take("192.0.2.1");
      expect((await redis.keys(`${unique}:*`)).sort()).toEqual([
        `${unique}:a:auth-failures:192.0.2.1`,
        `${unique}:a:rate:${client}`,
        `${unique}:b:rate:${client}`,
      ]);
    } finally {
      await Promise.all(buckets.map((opened) => opened?.close?.()));
      redis.disconnect();
    }
  });
});
