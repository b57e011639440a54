// Redis hung under an instance that keeps publishing (a long answer streaming): what waits for
// Redis is bounded. Past the bound, live run output — never stored, its subscribers resync — is
// dropped, and the log says so once; a change committed to the database (a workspace's event) is
// still sent. Counted exactly: the bound holds a known number of frames of a known size.
import { afterEach, describe, expect, inject, it } from "vitest";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import type { RunOutputFrame, WorkspaceEventMessage } from "../../src/events/topics.js";
import { warningLogger } from "../support/warning-logger.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { allowTimeFor, waitFor, waitUntil } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const KEPT = 10;
const PUBLISHED = 100;

describe.runIf(redisUrl || process.env.CI)("publishes waiting on a hung Redis", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  it("past the bound, live output frames are dropped (logged once) and committed changes are still sent", async () => {
    const proxy = await startFaultProxy(redisUrl!);
    cleanups.push(() => proxy.close());
    const { logger, warnings } = warningLogger();
    const prefix = `test-${process.pid}-${Date.now()}:publish-backlog:`;
    const frame = (i: number): RunOutputFrame => ({
      runId: "run1",
      spanId: "call",
      kind: "DELTA",
      parts: [{ toolCallId: null, offset: i, text: "x".repeat(400) }],
      final: false,
    });
    // Every frame below is as long as this one (offsets of three digits); the bound holds KEPT and a half.
    const size = `${prefix}run:output:run1`.length + JSON.stringify(frame(100)).length;
    const sender = await createRedisEventBus(proxy.url, prefix, { logger, publishBacklog: Math.floor((KEPT + 0.5) * size) });
    cleanups.push(() => sender.close());
    const receiver = await createRedisEventBus(redisUrl!, prefix);
    cleanups.push(() => receiver.close());

    const frames: RunOutputFrame[] = [];
    const changes: WorkspaceEventMessage[] = [];
    void (async () => {
      for await (const heard of receiver.events.subscribe("run:output", "run1")) frames.push(heard);
    })().catch(() => undefined);
    void (async () => {
      for await (const heard of receiver.events.subscribe("workspace:event", "w1")) changes.push(heard);
    })().catch(() => undefined);
    await waitUntil(async () => {
      sender.events.publish("workspace:event", "w1", { kind: "ARCHIVED", workspaceId: "w1", goalVersion: null, link: null, runId: null, at: "ready" });
      await allowTimeFor("the event to arrive", 50);
      return changes.length > 0 || undefined;
    }, 10_000);
    await allowTimeFor("late arrivals of the readiness events", 200);
    changes.splice(0);

    proxy.hang();
    for (let i = 0; i < PUBLISHED; i += 1) sender.events.publish("run:output", "run1", frame(100 + i));
    for (let i = 0; i < 5; i += 1)
      sender.events.publish("workspace:event", "w1", { kind: "GOAL_UPDATED", workspaceId: "w1", goalVersion: i, link: null, runId: null, at: "hung" });
    await allowTimeFor("the publishes to be sent (into the hung link)", 200);
    proxy.heal();

    await waitFor(() => changes.length === 5, 10_000);
    await allowTimeFor("frames still on their way", 300);
    expect(frames.map((heard) => heard.parts[0]!.offset)).toEqual(Array.from({ length: KEPT }, (_, i) => 100 + i));
    expect(changes.map((heard) => heard.goalVersion)).toEqual([0, 1, 2, 3, 4]);
    expect(warnings.map(([message]) => message)).toEqual([
      "Redis is not taking the event bus's publishes: live run output is dropped until it does (subscribers resync)",
    ]);

    // Redis answered everything: output is sent again.
    sender.events.publish("run:output", "run1", frame(999));
    await waitFor(() => frames.length === KEPT + 1, 10_000);
    expect(frames.at(-1)!.parts[0]!.offset).toBe(999);
  }, 60_000);
});
