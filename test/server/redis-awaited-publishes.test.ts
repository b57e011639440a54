// A subscriber who joins a run mid-call has nothing of the call until its snapshot comes: the ask
// for it and the answer go to Redis before the publishing instance's loop takes its next callback
// (in a burst, the end of the turn is tens of milliseconds away on each of the two instances), not
// at the turn's end with the other publishes. Answers a worker gives one after another in one
// chain still share one write, and pieces of output still go together at the turn's end. Real
// Redis; the socket writes counted are this process's writes to it.
import { Socket } from "node:net";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import type { RunOutputFrame } from "../../src/events/topics.js";
import { allowTimeFor, waitFor } from "../support/wait.js";

const redisUrl = inject("redisUrl");
let prefixes = 0;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

/** A sending bus and a receiving one on a prefix of their own; the sender's writes to Redis, as text. */
async function buses() {
  const prefix = `test-${process.pid}-${Date.now()}-${(prefixes += 1)}:awaited:`;
  const [sender, receiver] = await Promise.all([createRedisEventBus(redisUrl!, prefix), createRedisEventBus(redisUrl!, prefix)]);
  cleanups.push(() => Promise.all([sender.close(), receiver.close()]));
  const heard: string[] = [];
  for (const topic of ["run:output:wanted", "run:output:run1"] as const)
    void (async () => {
      for await (const message of receiver.events.subscribe(topic as "run:output:wanted")) heard.push(`${topic} ${JSON.stringify(message)}`);
    })();
  await allowTimeFor("the subscriptions to reach Redis", 300);
  const redisPort = Number(new URL(redisUrl!).port || 6379);
  const write = vi.spyOn(Socket.prototype, "write");
  cleanups.push(async () => write.mockRestore());
  const writes = () => write.mock.calls.filter((_, i) => (write.mock.contexts[i] as Socket).remotePort === redisPort).map(([data]) => String(data));
  return { events: sender.events, heard, writes };
}

/** After the callbacks a publish's code queued (its promise chain and ticks), before the loop's next callback. */
const chainDone = () => new Promise<void>((resolve) => process.nextTick(() => queueMicrotask(() => process.nextTick(resolve))));
const turnEnded = () => new Promise((resolve) => setImmediate(resolve));

const frame = (kind: RunOutputFrame["kind"], text: string): RunOutputFrame => ({
  runId: "run1",
  spanId: "call1",
  kind,
  parts: [{ toolCallId: null, offset: 0, text }],
  final: false,
});

describe.runIf(redisUrl || process.env.CI)("publishes someone waits on", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  it("sends a subscriber's ask for a snapshot before the loop takes its next callback", async () => {
    const { events, heard, writes } = await buses();
    events.publish("run:output:wanted", { runId: "run1" });
    await chainDone();
    // Before: nothing written until the turn ended.
    expect(writes()).toHaveLength(1);
    expect(writes()[0]).toContain("run:output:wanted");
    await waitFor(() => heard.length === 1, 3_000);
  });

  it("sends the snapshot that answers it at once too, after the pieces published before it", async () => {
    const { events, heard, writes } = await buses();
    events.publish("run:output", "run1", frame("DELTA", 'a "kind":"SNAPSHOT" in text'));
    events.publish("run:output", "run1", frame("SNAPSHOT", "all so far"));
    await chainDone();
    expect(writes()).toHaveLength(1);
    await waitFor(() => heard.length === 2, 3_000);
    expect(heard.map((line) => JSON.parse(line.slice(line.indexOf(" ") + 1)).kind)).toEqual(["DELTA", "SNAPSHOT"]);
  });

  it("writes a SUBSCRIBE started in the same step before the ask, so the answer cannot overtake it", async () => {
    const { events, writes } = await buses();
    // A callback of its own (an I/O callback's context, not a promise's).
    setImmediate(() => {
      void events.subscribe("run:output", "run2")[Symbol.asyncIterator]().next();
      events.publish("run:output:wanted", { runId: "run2" });
    });
    await turnEnded();
    await chainDone();
    const order = writes().map((data) => (data.includes("\nsubscribe\r") ? "subscribe" : data.includes("\npublish\r") ? "publish" : data));
    expect(order).toEqual(["subscribe", "publish"]);
  });

  it("sends the answers a worker gives one after another in one chain of callbacks in one write", async () => {
    const { events, heard, writes } = await buses();
    // As the worker answers asks that arrived together: one answer per step of its loop.
    for (let i = 0; i < 20; i += 1) {
      events.publish("run:output", "run1", frame("SNAPSHOT", `answer ${i}`));
      await Promise.resolve();
    }
    await chainDone();
    // One write per answer with a microtask of its own.
    expect(writes()).toHaveLength(1);
    await waitFor(() => heard.length === 20, 3_000);
  });

  it("still sends pieces of output together at the turn's end, in one write", async () => {
    const { events, heard, writes } = await buses();
    for (let i = 0; i < 3; i += 1) events.publish("run:output", "run1", frame("DELTA", `piece ${i} with "kind":"SNAPSHOT" quoted`));
    await chainDone();
    expect(writes()).toHaveLength(0);
    await turnEnded();
    expect(writes()).toHaveLength(1);
    await waitFor(() => heard.length === 3, 3_000);
  });
});
