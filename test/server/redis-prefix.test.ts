// Deployments sharing one Redis never hear each other: every channel carries REDIS_PREFIX (by
// default derived from the database name), so an event published by one deployment reaches its
// own instances and no other deployment's. Real Redis (the machine's, shared by every test).
import { describe, expect, inject, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import type { EventBus } from "../../src/events/topics.js";
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
});
