// Many subscriptions start together (a hundred runOutput subscribers as their runs are admitted):
// the SUBSCRIBEs one instance issues together reach Redis as one command, in the order issued,
// without losing what is published right after the listening began, and Redis going away ends
// no process. Real Redis (the machine's, shared by every test); the commands counted are the ones
// the clients send on each test's own channel prefix, what Redis holds is asked of Redis.
import { spawn } from "node:child_process";
import { Redis } from "ioredis";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { createRedisEventBus, subscribingTogether } from "../../src/events/redis-event-target.js";
import { EventLinkLostError } from "../../src/events/topics.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { allowTimeFor, waitFor, waitUntil, withTimeout } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const SUBSCRIBERS = 50;
let prefixes = 0;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

/** A prefix no other test uses, and the SUBSCRIBE / UNSUBSCRIBE commands sent to Redis on its channels. */
async function watchRedis() {
  const prefix = `test-${process.pid}-${Date.now()}-${(prefixes += 1)}:subscribes:`;
  const commands: { kind: string; channels: string[] }[] = [];
  const sent = vi.spyOn(Redis.prototype, "sendCommand").mockImplementation(function (this: Redis, command, stream) {
    const channels = command.args.map(String);
    if ((command.name === "subscribe" || command.name === "unsubscribe") && channels.some((channel) => channel.startsWith(prefix)))
      commands.push({ kind: command.name, channels: channels.map((channel) => channel.slice(prefix.length)) });
    return sendCommand.call(this, command, stream);
  });
  const plain = new Redis(redisUrl!);
  cleanups.push(async () => {
    sent.mockRestore();
    await plain.quit();
  });
  const numsub = async (...channels: string[]) => {
    const reply = (await plain.call("PUBSUB", "NUMSUB", ...channels.map((channel) => prefix + channel))) as (string | number)[];
    return channels.map((_, i) => Number(reply[i * 2 + 1]));
  };
  /** Waits until Redis holds exactly these subscriber counts on the channels. */
  const holds = (counts: Record<string, number>) =>
    waitUntil(async () => {
      const now = await numsub(...Object.keys(counts));
      return now.every((count, i) => count === Object.values(counts)[i]) ? true : undefined;
    }, 5_000);
  // A spy handles the promises it sees returned: a test of unhandled rejections counts nothing.
  const stopCounting = () => sent.mockRestore();
  return { prefix, commands, plain, holds, stopCounting };
}
const sendCommand = Redis.prototype.sendCommand;

/**
 * Another process that answers at once, with plain clients: a `run:output:wanted` request with a
 * snapshot on the run's output (the executing instance), a `read` of a trace with a change on the
 * trace (the database read, and a change the worker process committed and published right after
 * it). Prints once listening.
 */
const RESPONDER = `
import { Redis } from "ioredis";
const [url, prefix] = process.argv.slice(1);
const listener = new Redis(url);
const publisher = new Redis(url);
listener.on("message", (channel, message) => {
  if (channel === prefix + "read") {
    void publisher.publish(prefix + "trace:change:" + message, JSON.stringify({ traceId: message, seq: 1, type: "SPAN_STARTED" }));
    return;
  }
  const { runId } = JSON.parse(message);
  void publisher.publish(prefix + "run:output:" + runId, JSON.stringify({ runId, spanId: "call", kind: "SNAPSHOT", parts: [], final: false }));
});
await Promise.all([listener.subscribe(prefix + "run:output:wanted", prefix + "read"), publisher.ping()]);
process.stdout.write("listening\\n");
`;

async function startResponder(prefix: string) {
  const responder = spawn(process.execPath, ["--input-type=module", "-e", RESPONDER, redisUrl!, prefix], { stdio: ["ignore", "pipe", "inherit"] });
  cleanups.push(async () => responder.kill());
  await new Promise((resolve) => responder.stdout.once("data", resolve));
}

async function bus(url: string, prefix: string) {
  const created = await createRedisEventBus(url, prefix);
  cleanups.push(() => created.close());
  return created.events;
}

describe.runIf(redisUrl || process.env.CI)("subscriptions to Redis", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  it(`sends ${SUBSCRIBERS} subscriptions started together as one SUBSCRIBE, and each subscriber hears its run`, async () => {
    const redis = await watchRedis();
    const [api, worker] = await Promise.all([bus(redisUrl!, redis.prefix), bus(redisUrl!, redis.prefix)]);
    const heard = new Map<string, string>();
    for (let i = 0; i < SUBSCRIBERS; i += 1)
      void (async () => {
        for await (const frame of api.subscribe("run:output", `run${i}`)) heard.set(frame.runId, frame.spanId);
      })();
    await redis.holds(Object.fromEntries(Array.from({ length: SUBSCRIBERS }, (_, i) => [`run:output:run${i}`, 1])));
    // One SUBSCRIBE per subscriber before: 50.
    expect(redis.commands).toEqual([{ kind: "subscribe", channels: Array.from({ length: SUBSCRIBERS }, (_, i) => `run:output:run${i}`) }]);
    for (let i = 0; i < SUBSCRIBERS; i += 1)
      worker.publish("run:output", `run${i}`, { runId: `run${i}`, spanId: `span${i}`, kind: "DELTA", parts: [], final: false });
    await waitFor(() => heard.size === SUBSCRIBERS);
    expect([...heard].sort()).toEqual(Array.from({ length: SUBSCRIBERS }, (_, i) => [`run${i}`, `span${i}`]).sort());
  });

  it("keeps the order of subscribes and unsubscribes issued together: the last one of a channel holds", async () => {
    const redis = await watchRedis();
    const client = new Redis(redisUrl!);
    cleanups.push(() => client.quit());
    await client.ping();
    const together = subscribingTogether(client);
    const heard: string[] = [];
    client.on("message", (channel: string) => heard.push(channel.slice(redis.prefix.length)));
    void together.subscribe(`${redis.prefix}left`);
    await redis.holds({ left: 1 });
    // In one go: a channel joined then left, one left then joined again, and one joined.
    void together.subscribe(`${redis.prefix}joined-then-left`);
    void together.unsubscribe(`${redis.prefix}joined-then-left`);
    void together.unsubscribe(`${redis.prefix}left`);
    void together.subscribe(`${redis.prefix}left`);
    void together.subscribe(`${redis.prefix}joined`);
    await redis.holds({ "joined-then-left": 0, left: 1, joined: 1 });
    expect(redis.commands.slice(1)).toEqual([
      { kind: "subscribe", channels: ["joined-then-left"] },
      { kind: "unsubscribe", channels: ["joined-then-left", "left"] },
      { kind: "subscribe", channels: ["left", "joined"] },
    ]);
    for (const channel of ["joined-then-left", "left", "joined"]) await redis.plain.publish(redis.prefix + channel, "x");
    await waitFor(() => heard.length === 2);
    await allowTimeFor("a message on the channel left", 100);
    expect(heard).toEqual(["left", "joined"]);
  });

  it("hears the answer to a request published right after subscribing, answered at once by another instance", async () => {
    const redis = await watchRedis();
    const api = await bus(redisUrl!, redis.prefix);
    // The executing instance, another process, answers every snapshot request as soon as it hears it.
    await startResponder(redis.prefix);
    const answered = new Set<string>();
    for (let i = 0; i < 20; i += 1) {
      const runId = `run${i}`;
      void (async () => {
        for await (const frame of api.subscribe("run:output", runId)) answered.add(frame.runId);
      })();
      api.publish("run:output:wanted", { runId });
    }
    await waitFor(() => answered.size === 20, 3_000);
  });

  it("hears a change published right after the subscriber's read began, with the rest of its turn busy", async () => {
    const redis = await watchRedis();
    const api = await bus(redisUrl!, redis.prefix);
    await startResponder(redis.prefix);
    const heard = new Set<string>();
    for (let i = 0; i < 20; i += 1) {
      const traceId = `trace${i}`;
      void (async () => {
        for await (const change of api.subscribe("trace:change", traceId)) heard.add(change.traceId);
      })();
      // Listening first, then the read of what came before, sent at once (as a database client
      // does): the responder stands for the database and the worker process that commits a
      // change right after the read and publishes it at once.
      await Promise.resolve();
      void redis.plain.publish(`${redis.prefix}read`, traceId);
    }
    // The rest of the turn: other requests handled meanwhile.
    const until = performance.now() + 20;
    while (performance.now() < until);
    await waitFor(() => heard.size === 20, 3_000);
  });

  it("goes on without an unhandled rejection when Redis is gone as subscriptions start and end", async () => {
    const redis = await watchRedis();
    redis.stopCounting();
    const proxy = await startFaultProxy(redisUrl!);
    cleanups.push(() => proxy.close());
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    cleanups.push(async () => process.off("unhandledRejection", onRejection));
    const api = await bus(proxy.url, redis.prefix);
    const before = api.subscribe("mcp:changed")[Symbol.asyncIterator]();
    void before.next();
    await redis.holds({ "mcp:changed": 1 });
    proxy.refuse();
    const during = api.subscribe("run:output", "run1")[Symbol.asyncIterator]();
    void during.next();
    void before.return?.();
    // The client gives each command up after its reconnection attempts (maxRetriesPerRequest).
    await allowTimeFor("the client to give up on the commands", 1_500);
    void during.return?.();
    proxy.heal();
    expect(rejections).toEqual([]);
  });

  it("listens again on a channel whose SUBSCRIBE Redis never got, once Redis is back", async () => {
    const redis = await watchRedis();
    redis.stopCounting();
    const proxy = await startFaultProxy(redisUrl!);
    cleanups.push(() => proxy.close());
    const api = await bus(proxy.url, redis.prefix);
    proxy.refuse();
    // The run's first subscriber starts during the outage; its SUBSCRIBE is given up on.
    const first = api.subscribe("run:output", "run1")[Symbol.asyncIterator]();
    const firstHeard = first.next();
    await allowTimeFor("the client to give up on the SUBSCRIBE", 1_500);
    proxy.heal();
    // Redis back: the first subscriber is told that it may have missed what was published meanwhile.
    await expect(withTimeout(firstHeard, 5_000)).rejects.toBeInstanceOf(EventLinkLostError);
    // Listening again, and a later subscriber of the same run on this instance joining it, both hear the run.
    const again = api.subscribe("run:output", "run1")[Symbol.asyncIterator]();
    const againHeard = again.next();
    await redis.holds({ "run:output:run1": 1 });
    const second = api.subscribe("run:output", "run1")[Symbol.asyncIterator]();
    const secondHeard = second.next();
    await redis.plain.publish(`${redis.prefix}run:output:run1`, JSON.stringify({ runId: "run1", piece: 1 }));
    expect((await withTimeout(againHeard, 3_000)).value).toEqual({ runId: "run1", piece: 1 });
    expect((await withTimeout(secondHeard, 3_000)).value).toEqual({ runId: "run1", piece: 1 });
    void again.return?.();
    void second.return?.();
  });
});
