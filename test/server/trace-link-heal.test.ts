// An API instance's Redis link refused while a run's last changes — its trace's end included — are
// committed and published, then healed: each of the trace's live subscribers on that instance reads
// what it did not hear from the database and ends with the trace's own TRACE_ENDED, every change
// once. Real Redis (the machine's, shared by every test) behind a fault proxy; the trace's changes
// are published by a plain client as the worker's instance would, and read from a log standing in
// for the database.
import { Redis } from "ioredis";
import { afterEach, describe, expect, inject, it } from "vitest";
import type { TraceChangeMessage } from "../../src/events/topics.js";
import { createRedisEventBus } from "../../src/events/redis-event-target.js";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { type TraceUpdate, listenTrace, traceUpdates } from "../../src/trace/updates/trace-updates.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { allowTimeFor, waitUntil, withTimeout } from "../support/wait.js";

const redisUrl = inject("redisUrl");
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  // The latest first: the bus's clients quit before the proxy they go through closes.
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.runIf(redisUrl)("a trace's subscribers when their instance's Redis link heals right after the trace ended", () => {
  it("each ends with the trace's TRACE_ENDED, every change once", async () => {
    const prefix = `test-${process.pid}-${Date.now()}:trace-heal:`;
    const traceId = "trace-heal";
    const proxy = await startFaultProxy(redisUrl!);
    cleanups.push(() => proxy.close());
    const api = await createRedisEventBus(proxy.url, prefix);
    cleanups.push(() => api.close());
    const worker = new Redis(redisUrl!);
    cleanups.push(() => worker.quit());
    const committed: TraceChangeMessage[] = [];
    const commit = async (seq: number, type: TraceChangeMessage["type"] = "SPAN_UPDATED") => {
      const change: TraceChangeMessage = { traceId, seq, type, spanId: null, eventId: null, span: null, at: new Date(0).toISOString() };
      committed.push(change);
      await worker.publish(`${prefix}trace:change:${traceId}`, JSON.stringify(change));
    };
    const streams = [0, 1, 2].map(() =>
      traceUpdates({
        prisma: {} as PrismaClient,
        events: api.events,
        traceId,
        afterSeq: 0,
        bufferLimit: 100,
        // Far beyond the test: what was missed is found because the link came back, not by a quiet spell's read.
        idleCheckMs: 60_000,
        live: listenTrace({ events: api.events, traceId, bufferLimit: 100 }),
        start: { expired: null, settledWithoutTrace: false, changes: [] },
        async *replay(_prisma, _traceId, afterSeq, beforeSeq) {
          for (const row of committed.filter((c) => c.seq > afterSeq && (beforeSeq === undefined || c.seq < beforeSeq))) yield { ...row, at: new Date(row.at) };
        },
      }),
    );
    const received = streams.map(async (stream) => {
      const seqs: string[] = [];
      for await (const update of stream as AsyncIterable<TraceUpdate>) seqs.push(`${update.seq}:${update.type}`);
      return seqs;
    });
    await waitUntil(async () => ((await worker.call("PUBSUB", "NUMSUB", `${prefix}trace:change:${traceId}`)) as number[])[1] === 1 || undefined, 5_000);
    for (let seq = 1; seq <= 3; seq += 1) await commit(seq);
    await waitUntil(() => committed.length === 3 || undefined, 1_000);
    await allowTimeFor("the first changes to be heard", 300);
    proxy.refuse();
    await commit(4);
    await commit(5, "TRACE_ENDED");
    await allowTimeFor("the instance's client to notice its link is gone", 500);
    proxy.heal();
    const expected = ["1:SPAN_UPDATED", "2:SPAN_UPDATED", "3:SPAN_UPDATED", "4:SPAN_UPDATED", "5:TRACE_ENDED"];
    for (const seqs of await withTimeout(Promise.all(received), 10_000)) expect(seqs).toEqual(expected);
  }, 30_000);
});
