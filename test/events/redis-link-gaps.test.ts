// The event bus's Redis link lost and back (a failover: connections reset, through a fault proxy)
// while subscribers listen: ioredis reconnects and subscribes again silently, and what was
// published in between was never heard. Subscribers are told, and catch up: runEvents reads the
// run again (a run cancelled meanwhile completes its subscription), a process's own listeners
// look for what was announced (keepListening's onResumed).
import { afterEach, describe, expect, inject, it } from "vitest";
import type { WebSocket } from "ws";
import { CancelRunDocument } from "../../sdk/generated/graphql.js";
import { keepListening } from "../../src/events/keep-listening.js";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import { silentLogger } from "../../src/logger.js";
import { admit, expectType } from "../support/fixtures.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { subscribeRawWs } from "../support/raw-ws-subscription.js";
import { startTestApp } from "../support/test-app.js";
import { allowTimeFor, waitFor, waitUntil } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const cleanups: (() => Promise<unknown>)[] = [];
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Message = { type: string; payload?: { data?: { runEvents?: { status: string } } } };
const statuses = (received: Message[]) => received.filter((m) => m.type === "next").map((m) => m.payload?.data?.runEvents?.status);

async function busThroughProxy(name: string) {
  const proxy = await startFaultProxy(redisUrl!);
  cleanups.push(() => proxy.close());
  const prefix = `test-${process.pid}-${Date.now()}:${name}:`;
  const bus = await createRedisEventBus(proxy.url, prefix, { logger: silentLogger });
  cleanups.push(() => bus.close());
  const direct = await createRedisEventBus(redisUrl!, prefix);
  cleanups.push(() => direct.close());
  return { proxy, bus, direct };
}

describe.runIf(redisUrl || process.env.CI)("the event bus's Redis link lost and back", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  it("runEvents of a run cancelled while the link hung, then reset: the subscriber gets CANCELLED and the subscription completes", async () => {
    const { proxy, bus } = await busThroughProxy("run-events-gap");
    const t = await startTestApp("pglite", { listen: true, events: bus.events });
    cleanups.push(() => t.close());
    const { run } = await admit(t.client, { question: "Cancelled while Redis fails over" });
    const subscriber = await subscribeRawWs<Message>(sockets, t.server!.wsUrl, "subscription($id: ID!) { runEvents(runId: $id) { status } }", { id: run.id });
    await waitFor(() => statuses(subscriber.received).length === 1, 10_000);
    expect(statuses(subscriber.received)).toEqual(["QUEUED"]);

    proxy.hang();
    expectType((await t.client.request(CancelRunDocument, { input: { runId: run.id } })).cancelRun, "CancelRunSuccess");
    await allowTimeFor("the cancel's announcement to wait on the hung link", 500);
    proxy.reset();
    proxy.heal();

    await waitFor(() => subscriber.received.at(-1)?.type === "complete", 10_000);
    expect(statuses(subscriber.received)).toEqual(["QUEUED", "CANCELLED"]);
  }, 60_000);

  it("a process's own listener is told once that it listens again, and goes on hearing", async () => {
    const { proxy, bus, direct } = await busThroughProxy("keep-listening-gap");
    const heard: string[] = [];
    let resumed = 0;
    const listening = keepListening({
      what: "run changes",
      subscribe: () => bus.events.subscribe("run:changes"),
      onEvent: (change) => heard.push(change.runId),
      onResumed: () => (resumed += 1),
      logger: silentLogger,
    });
    cleanups.push(() => listening.stop());
    const announce = (runId: string) => direct.events.publish("run:changes", { runId, status: "RUNNING", at: new Date().toISOString() });
    await waitUntil(async () => {
      announce("before");
      await allowTimeFor("the announcement to arrive", 50);
      return heard.includes("before") || undefined;
    }, 10_000);

    proxy.reset();
    await waitFor(() => resumed === 1, 10_000);
    await waitUntil(async () => {
      announce("after");
      await allowTimeFor("the announcement to arrive", 50);
      return heard.includes("after") || undefined;
    }, 10_000);
    await allowTimeFor("a repeated resumption", 200);
    expect(resumed).toBe(1);
  }, 60_000);
});
