// A trace's stream across a gap of the event bus's link (Redis reset and back, EventLinkLostError):
// what was committed meanwhile is read from the database and the stream goes on, without a gap or a
// duplicate, to the trace's own TRACE_ENDED — never a RESYNC_REQUIRED for a subscriber that kept up.
import { describe, expect, it } from "vitest";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { createEventBus, type TraceChangeMessage } from "../../src/events/topics.js";
import { listenTrace, type TraceUpdate, traceUpdates } from "../../src/trace/updates/trace-updates.js";

const traceId = "trace-gap";

function change(seq: number, type: TraceChangeMessage["type"] = "SPAN_UPDATED"): TraceChangeMessage {
  return { traceId, seq, type, spanId: null, eventId: null, span: null, at: new Date(0).toISOString() };
}

/** A bus on an in-process target whose link gaps the test fires, and a trace log standing in for the database. */
function setup() {
  const gaps: (() => void)[] = [];
  const events = createEventBus({ eventTarget: new EventTarget(), onGap: (listener) => gaps.push(listener) });
  const committed: TraceChangeMessage[] = [];
  const commit = (message: TraceChangeMessage, published: boolean) => {
    committed.push(message);
    if (published) events.publish("trace:change", traceId, message);
  };
  const gap = () => {
    for (const listener of gaps) listener();
  };
  // Listening from the moment the stream is opened, as a subscription's is.
  const open = () =>
    traceUpdates({
      prisma: {} as PrismaClient,
      events,
      traceId,
      afterSeq: 0,
      bufferLimit: 100,
      live: listenTrace({ events, traceId, bufferLimit: 100 }),
      idleCheckMs: 60_000,
      start: { expired: null, settledWithoutTrace: false, changes: [] },
      async *replay(_prisma, _traceId, afterSeq, beforeSeq) {
        for (const row of committed.filter((c) => c.seq > afterSeq && (beforeSeq === undefined || c.seq < beforeSeq))) yield { ...row, at: new Date(row.at) };
      },
    })[Symbol.asyncIterator]();
  return { commit, gap, open };
}

const seqsOf = (updates: TraceUpdate[]) => updates.map((update) => `${update.seq}:${update.type}`);

async function take(stream: AsyncIterator<TraceUpdate>, count: number): Promise<TraceUpdate[]> {
  const updates: TraceUpdate[] = [];
  while (updates.length < count) {
    const next = await stream.next();
    if (next.done) break;
    updates.push(next.value);
  }
  return updates;
}

describe("traceUpdates across a gap of the bus's link", { timeout: 5_000 }, () => {
  it("a trace that ended while the link was down ends with its own TRACE_ENDED, each change once", async () => {
    const { commit, gap, open } = setup();
    const streams = [open(), open(), open()];
    for (let seq = 1; seq <= 3; seq += 1) commit(change(seq), true);
    const before = await Promise.all(streams.map((stream) => take(stream, 3)));
    // The link fails: the run's last changes are committed, their announcements lost; then it is back.
    commit(change(4), false);
    commit(change(5, "TRACE_ENDED"), false);
    gap();
    for (const [index, stream] of streams.entries()) {
      const all = [...before[index]!, ...(await take(stream, 10))];
      expect(seqsOf(all)).toEqual(["1:SPAN_UPDATED", "2:SPAN_UPDATED", "3:SPAN_UPDATED", "4:SPAN_UPDATED", "5:TRACE_ENDED"]);
    }
  });

  it("a change heard live right after the link is back is not sent again by the read of what was missed", async () => {
    const { commit, gap, open } = setup();
    const stream = open();
    commit(change(1), true);
    commit(change(2), true);
    const before = await take(stream, 2);
    commit(change(3), false);
    gap();
    // Committed and announced on the new listening while the missed changes are still to be read.
    commit(change(4), true);
    commit(change(5, "TRACE_ENDED"), true);
    const all = [...before, ...(await take(stream, 10))];
    expect(seqsOf(all)).toEqual(["1:SPAN_UPDATED", "2:SPAN_UPDATED", "3:SPAN_UPDATED", "4:SPAN_UPDATED", "5:TRACE_ENDED"]);
  });

  it("a stream still open after the gap keeps listening: a change published later is heard", async () => {
    const { commit, gap, open } = setup();
    const stream = open();
    commit(change(1), true);
    const before = await take(stream, 1);
    gap();
    const afterGap = stream.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    commit(change(2), true);
    commit(change(3, "TRACE_ENDED"), true);
    const all = [...before, (await afterGap).value as TraceUpdate, ...(await take(stream, 10))];
    expect(seqsOf(all)).toEqual(["1:SPAN_UPDATED", "2:SPAN_UPDATED", "3:TRACE_ENDED"]);
  });
});
