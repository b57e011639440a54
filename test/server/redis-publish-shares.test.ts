// What waits for Redis is bounded and shared by every principal's live output: snapshots (a call's
// output whole, for subscribers who joined mid-call) take at most half of it, so one run whose
// large call is asked for over and over cannot have every other run's pieces dropped. Redis hung
// under the publishing instance (a fault proxy), counted exactly: the bound holds a known number
// of frames of known sizes. A snapshot larger than the whole backlog still goes, alone: the
// subscriber who asked for it would otherwise ask again forever.
import { afterEach, describe, expect, inject, it } from "vitest";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import type { RunOutputFrame } from "../../src/events/topics.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { silentLogger } from "../../src/logger.js";
import { allowTimeFor, waitFor, waitUntil } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const PIECES = 40;
const ARGUMENTS = 8_000;

/**
 * A sender whose Redis link runs through the fault proxy (hung by the tests) with the given
 * backlog, and a receiver on Redis itself; `heard` collects what reaches the receiver of runs `runIds`.
 */
async function busesThrough(proxyUrl: string, prefix: string, backlog: number, runIds: string[]) {
  const sender = await createRedisEventBus(proxyUrl, prefix, { logger: silentLogger, publishBacklog: backlog });
  cleanups.push(() => sender.close());
  const receiver = await createRedisEventBus(redisUrl!, prefix);
  cleanups.push(() => receiver.close());
  const heard: RunOutputFrame[] = [];
  for (const runId of runIds)
    void (async () => {
      for await (const frame of receiver.events.subscribe("run:output", runId)) heard.push(frame);
    })().catch(() => undefined);
  return { sender, heard };
}

describe.runIf(redisUrl || process.env.CI)("the publish backlog's share of snapshots", () => {
  if (!redisUrl) it("needs Redis on CI (REDIS_URL)", () => expect.fail("Redis is required on CI (REDIS_URL)"));

  it("drops one run's snapshots past half the backlog while another run's pieces all go", async () => {
    const proxy = await startFaultProxy(redisUrl!);
    cleanups.push(() => proxy.close());
    const prefix = `test-${process.pid}-${Date.now()}:publish-shares:`;
    const snapshot = (i: number): RunOutputFrame => ({
      runId: "runA",
      spanId: "callA",
      kind: "SNAPSHOT",
      parts: [{ toolCallId: `t${i}`, offset: 0, text: "y".repeat(ARGUMENTS) }],
      final: false,
    });
    const piece = (i: number): RunOutputFrame => ({
      runId: "runB",
      spanId: "callB",
      kind: "DELTA",
      parts: [{ toolCallId: null, offset: 1000 + i * 200, text: "x".repeat(200) }],
      final: false,
    });
    const snapshotSize = `${prefix}run:output:runA`.length + JSON.stringify(snapshot(0)).length;
    const pieceSize = `${prefix}run:output:runB`.length + JSON.stringify(piece(0)).length;
    // Room for five and a half snapshots: the snapshots' half holds two, and the pieces all fit beside them.
    const backlog = Math.floor(5.5 * snapshotSize);
    expect(2 * snapshotSize + PIECES * pieceSize).toBeLessThan(backlog);
    // All of them would not: without the share, the last pieces are dropped.
    expect((PIECES / 4) * snapshotSize + PIECES * pieceSize).toBeGreaterThan(backlog);
    const { sender, heard } = await busesThrough(proxy.url, prefix, backlog, ["runA", "runB"]);
    await waitUntil(async () => {
      sender.events.publish("run:output", "runB", { ...piece(-5), final: true });
      await allowTimeFor("the frame to arrive", 50);
      return heard.length > 0 || undefined;
    }, 10_000);
    await allowTimeFor("late arrivals of the readiness frames", 200);
    heard.splice(0);

    proxy.hang();
    // Run A's snapshots asked for over and over, run B's pieces streaming meanwhile: four pieces a snapshot.
    for (let i = 0; i < PIECES; i += 1) {
      if (i % 4 === 0) sender.events.publish("run:output", "runA", snapshot(i / 4));
      sender.events.publish("run:output", "runB", piece(i));
    }
    await allowTimeFor("the publishes to be sent (into the hung link)", 200);
    proxy.heal();

    const pieces = () => heard.filter((frame) => frame.runId === "runB");
    await waitFor(() => pieces().length === PIECES, 10_000);
    await allowTimeFor("frames still on their way", 300);
    expect(pieces().map((frame) => frame.parts[0]!.offset)).toEqual(Array.from({ length: PIECES }, (_, i) => 1000 + i * 200));
    // Two snapshots fit in half the backlog; the others were dropped (their askers ask again).
    expect(heard.filter((frame) => frame.runId === "runA").map((frame) => frame.parts[0]!.toolCallId)).toEqual(["t0", "t1"]);
  }, 60_000);

  it("sends a snapshot larger than the share when no other snapshot waits", async () => {
    const proxy = await startFaultProxy(redisUrl!);
    cleanups.push(() => proxy.close());
    const prefix = `test-${process.pid}-${Date.now()}:publish-share-large:`;
    const large: RunOutputFrame = {
      runId: "runA",
      spanId: "callA",
      kind: "SNAPSHOT",
      parts: [{ toolCallId: null, offset: 0, text: "z".repeat(30_000) }],
      final: false,
    };
    const { sender, heard } = await busesThrough(proxy.url, prefix, 40_000, ["runA"]);
    await allowTimeFor("the subscription to reach Redis", 300);
    sender.events.publish("run:output", "runA", large);
    await waitFor(() => heard.length === 1, 10_000);
    expect(heard[0]!.parts[0]!.text).toHaveLength(30_000);
  }, 60_000);
  it("sends a snapshot larger than the whole backlog when no other snapshot waits, the pieces beside it and no other snapshot", async () => {
    const proxy = await startFaultProxy(redisUrl!);
    cleanups.push(() => proxy.close());
    const prefix = `test-${process.pid}-${Date.now()}:publish-share-oversize:`;
    const snapshot = (text: string): RunOutputFrame => ({
      runId: "runA",
      spanId: "callA",
      kind: "SNAPSHOT",
      parts: [{ toolCallId: null, offset: 0, text }],
      final: false,
    });
    const piece = (i: number): RunOutputFrame => ({
      runId: "runB",
      spanId: "callB",
      kind: "DELTA",
      parts: [{ toolCallId: null, offset: i * 200, text: "x".repeat(200) }],
      final: false,
    });
    const backlog = 40_000;
    const pieceSize = `${prefix}run:output:runB`.length + JSON.stringify(piece(0)).length;
    // The pieces fit in the half of the backlog the snapshots leave.
    expect(PIECES * pieceSize).toBeLessThan(backlog / 2);
    const { sender, heard } = await busesThrough(proxy.url, prefix, backlog, ["runA", "runB"]);
    await allowTimeFor("the subscriptions to reach Redis", 300);

    // Redis hung: the oversize snapshot waits, and the pieces and a second snapshot come while it does.
    proxy.hang();
    sender.events.publish("run:output", "runA", snapshot("z".repeat(60_000)));
    for (let i = 0; i < PIECES; i += 1) sender.events.publish("run:output", "runB", piece(i));
    sender.events.publish("run:output", "runA", snapshot("w".repeat(1_000)));
    await allowTimeFor("the publishes to be sent (into the hung link)", 200);
    proxy.heal();

    await waitFor(() => heard.filter((frame) => frame.runId === "runB").length === PIECES, 10_000);
    await waitFor(() => heard.some((frame) => frame.runId === "runA"), 10_000);
    await allowTimeFor("frames still on their way", 300);
    expect(heard.filter((frame) => frame.runId === "runB").map((frame) => frame.parts[0]!.offset)).toEqual(Array.from({ length: PIECES }, (_, i) => i * 200));
    expect(heard.filter((frame) => frame.runId === "runA").map((frame) => frame.parts[0]!.text)).toEqual(["z".repeat(60_000)]);
  }, 60_000);
});
