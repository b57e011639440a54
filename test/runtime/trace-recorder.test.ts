// T1, T2: spans and events are recorded as they happen, each change with the trace's next seq.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createEventBus, type TraceChangeMessage } from "../../src/events/topics.js";
import type { Database } from "../../src/db/open-database.js";
import { fromStored } from "../../src/domain/text/stored-text.js";
import { PrismaAttemptFence } from "../../src/domain/runs/attempt-fence.js";
import { AttemptFencedError } from "../../src/runtime/ports/attempt-fence.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { withSpan } from "../../src/runtime/loop/spans.js";
import { createBareRun } from "../support/bare-run.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";

describe.each(backends)("the trace recorder on %s", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  const events = createEventBus();
  let recorder: PrismaTraceRecorder;
  beforeAll(async () => {
    ({ db, dispose } = await openMigratedTestDatabase(backend));
    await db.migrate();
    recorder = new PrismaTraceRecorder({ prisma: db.prisma, events });
  });
  afterAll(async () => dispose?.());

  async function newTrace(): Promise<string> {
    const run = await createBareRun(db.prisma);
    return recorder.traceFor(run.runId);
  }

  it("shows a running span before it ends, then its status, usage and events", async () => {
    const traceId = await newTrace();
    const root = await recorder.startSpan({ traceId, kind: "RUN", name: "invoke_agent researcher" });
    const model = await recorder.startSpan({ traceId, parent: root, kind: "MODEL_CALL", name: "chat scripted", attributes: { a: 1 } });
    const running = await db.prisma.span.findUniqueOrThrow({ where: { id: model.id } });
    expect(running).toMatchObject({ status: "RUNNING", endedAt: null, parentId: root.id });

    await recorder.event(model, "THINKING", "considering sources");
    await recorder.updateSpan(model, { attributes: { b: 2 } });
    await recorder.endSpan(model, { status: "OK", usage: { input: 10, output: 5, cached: 2, reasoning: 1 } });
    const ended = await db.prisma.span.findUniqueOrThrow({ where: { id: model.id }, include: { events: true } });
    expect(ended).toMatchObject({ status: "OK", attributes: { a: 1, b: 2 }, usage: { input: 10, output: 5, cached: 2, reasoning: 1 } });
    expect(ended.endedAt).not.toBeNull();
    expect(ended.events.map((e) => [e.kind, e.payload, e.payloadSize])).toEqual([["THINKING", "considering sources", 19]]);
  });

  it("numbers concurrent changes 1..n without gaps, keeps a replay log in that order, and announces each after commit", async () => {
    const traceId = await newTrace();
    const announced: TraceChangeMessage[] = [];
    const subscription = events.subscribe("trace:change", traceId);
    const listening = (async () => {
      for await (const change of subscription) {
        announced.push(change);
        if (announced.length === 31) break;
      }
    })();
    const root = await recorder.startSpan({ traceId, kind: "RUN", name: "run" });
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        withSpan(recorder, { traceId, parent: root, kind: "TOOL_CALL", name: `execute_tool t${i}` }, async (span) => {
          await recorder.event(span, "TOOL_OUTPUT", { i });
        }),
      ),
    );
    await listening;
    const changes = await db.prisma.traceChange.findMany({ where: { traceId }, orderBy: { seq: "asc" } });
    expect(changes.map((c) => c.seq)).toEqual(Array.from({ length: 31 }, (_, i) => i + 1));
    expect(announced.map((c) => c.seq).sort((a, b) => a - b)).toEqual(changes.map((c) => c.seq));
    const eventSeqs = (await db.prisma.spanEvent.findMany({ where: { span: { traceId } } })).map((e) => e.seq);
    expect(new Set(eventSeqs).size).toBe(10);
    for (const change of changes.filter((c) => c.type === "EVENT_APPENDED")) expect(eventSeqs).toContain(change.seq);
    const trace = await db.prisma.trace.findUniqueOrThrow({ where: { id: traceId } });
    expect(trace.lastSeq).toBe(31);
  });

  it("group-commits the events of concurrent writers (two recorders, as two instances): gap-free, in each writer's order, each promise with its stored seq", async () => {
    const traceId = await newTrace();
    const other = new PrismaTraceRecorder({ prisma: db.prisma, events });
    const root = await recorder.startSpan({ traceId, kind: "RUN", name: "run" });
    const statements = vi.spyOn(db.prisma, "$queryRawUnsafe");
    const awkward = 'quotes " and \\ backslashes, \u0000 a NUL, emoji 🧪, an unpaired \ud800';
    const writers = 16;
    const perWriter = 40;
    const written = await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        const writer = w % 2 === 0 ? recorder : other;
        const seqs: number[] = [];
        for (let i = 0; i < perWriter; i += 1) seqs.push(await writer.event(root, "THINKING", i === 0 ? awkward : `writer ${w} event ${i}`));
        return seqs;
      }),
    );
    const total = writers * perWriter;
    // Far fewer statements than events: writes arriving while one is in flight go together.
    expect(statements.mock.calls.length).toBeLessThan(total / 2);
    statements.mockRestore();
    const stored = await db.prisma.spanEvent.findMany({ where: { spanId: root.id }, orderBy: { seq: "asc" } });
    expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 2));
    const changes = await db.prisma.traceChange.findMany({ where: { traceId, type: "EVENT_APPENDED" }, orderBy: { seq: "asc" } });
    expect(changes.map((c) => [c.seq, c.eventId])).toEqual(stored.map((e) => [e.seq, e.id]));
    const bySeq = new Map(stored.map((e) => [e.seq, e]));
    written.forEach((seqs, w) => {
      expect([...seqs].sort((a, b) => a - b)).toEqual(seqs); // each writer's events in its own order
      seqs.forEach((seq, i) => expect(bySeq.get(seq)!.payload).toEqual(i === 0 ? expect.any(String) : `writer ${w} event ${i}`));
    });
    // Exactly what was written comes back through the stored-text escape.
    expect(fromStored(bySeq.get(written[0]![0]!)!.payload)).toBe(awkward);
    expect((await db.prisma.trace.findUniqueOrThrow({ where: { id: traceId } })).lastSeq).toBe(total + 1);
  });

  it("a fenced recorder writes events only while its attempt holds the run; after a takeover it writes nothing and stops the attempt", async () => {
    const runId = await newTrace(); // a trace shares its run's id
    await db.prisma.run.update({ where: { id: runId }, data: { status: "RUNNING", attempt: 1, leaseOwner: "worker-a" } });
    const lost = vi.fn();
    const fenced = recorder.fenced(new PrismaAttemptFence(db.prisma, { runId, attempt: 1, workerId: "worker-a" }, lost));
    const root = await fenced.startSpan({ traceId: runId, kind: "RUN", name: "run" });
    await Promise.all([1, 2, 3].map((i) => fenced.event(root, "THINKING", `held ${i}`)));
    await db.prisma.run.update({ where: { id: runId }, data: { attempt: 2, leaseOwner: "worker-b" } });
    await expect(Promise.all([1, 2].map((i) => fenced.event(root, "THINKING", `after the takeover ${i}`)))).rejects.toBeInstanceOf(AttemptFencedError);
    expect(lost).toHaveBeenCalledTimes(1);
    const stored = await db.prisma.spanEvent.findMany({ where: { spanId: root.id }, orderBy: { seq: "asc" } });
    expect(stored.map((e) => e.payload).sort()).toEqual(["held 1", "held 2", "held 3"]);
    expect((await db.prisma.trace.findUniqueOrThrow({ where: { id: runId } })).lastSeq).toBe(4);
  });

  it("a fenced recorder writes behind the work, in order: a span's reference comes before its row, `flushed` waits for every record", async () => {
    const runId = await newTrace();
    await db.prisma.run.update({ where: { id: runId }, data: { status: "RUNNING", attempt: 1, leaseOwner: "worker-a" } });
    const fenced = recorder.fenced(new PrismaAttemptFence(db.prisma, { runId, attempt: 1, workerId: "worker-a" }, vi.fn()));
    const heard: TraceChangeMessage[] = [];
    const subscription = events.subscribe("trace:change", runId);
    const listening = (async () => {
      for await (const change of subscription) {
        heard.push(change);
        if (heard.length === 4) break;
      }
    })();
    const root = await fenced.startSpan({ traceId: runId, kind: "RUN", name: "run" });
    const turn = await fenced.startSpan({ traceId: runId, parent: root, kind: "TURN", name: "turn 1" });
    void fenced.event(turn, "BUDGET", { estimate: 1 });
    await fenced.endSpan(turn, { status: "OK" });
    await fenced.flushed!();
    await listening;
    const spans = await db.prisma.span.findMany({ where: { traceId: runId }, orderBy: { startedAt: "asc" } });
    expect(spans.map((span) => [span.id, span.parentId, span.status])).toEqual([
      [root.id, null, "RUNNING"],
      [turn.id, root.id, "OK"],
    ]);
    // Announced after commit, in seq order, each record once.
    expect(heard.map((change) => [change.seq, change.type])).toEqual([
      [1, "SPAN_STARTED"],
      [2, "SPAN_STARTED"],
      [3, "EVENT_APPENDED"],
      [4, "SPAN_ENDED"],
    ]);
  });

  it("a superseded attempt's records still queued are not written: `flushed` and its next trace call fail, and nothing after the refusal is written", async () => {
    const runId = await newTrace();
    await db.prisma.run.update({ where: { id: runId }, data: { status: "RUNNING", attempt: 1, leaseOwner: "worker-a" } });
    const lost = vi.fn();
    const fenced = recorder.fenced(new PrismaAttemptFence(db.prisma, { runId, attempt: 1, workerId: "worker-a" }, lost));
    const root = await fenced.startSpan({ traceId: runId, kind: "RUN", name: "run" });
    await fenced.flushed!();
    await db.prisma.run.update({ where: { id: runId }, data: { attempt: 2, leaseOwner: "worker-b" } });
    // Handed out at once, written behind: refused by the fence when written.
    const turn = await fenced.startSpan({ traceId: runId, parent: root, kind: "TURN", name: "turn 1" });
    void fenced.event(turn, "BUDGET", { estimate: 1 }).catch(() => undefined);
    await fenced.endSpan(turn, { status: "OK" });
    await expect(fenced.flushed!()).rejects.toBeInstanceOf(AttemptFencedError);
    await expect(fenced.startSpan({ traceId: runId, parent: root, kind: "TURN", name: "turn 2" })).rejects.toBeInstanceOf(AttemptFencedError);
    expect(lost).toHaveBeenCalledTimes(1);
    expect((await db.prisma.span.findMany({ where: { traceId: runId } })).map((span) => span.id)).toEqual([root.id]);
    expect(await db.prisma.spanEvent.count({ where: { spanId: turn.id } })).toBe(0);
    expect((await db.prisma.trace.findUniqueOrThrow({ where: { id: runId } })).lastSeq).toBe(1);
  });

  it("ends a span with ERROR and the message when the work throws", async () => {
    const traceId = await newTrace();
    await expect(
      withSpan(recorder, { traceId, kind: "TOOL_CALL", name: "execute_tool boom" }, async () => {
        throw new Error("tool exploded");
      }),
    ).rejects.toThrow("tool exploded");
    const [span] = await db.prisma.span.findMany({ where: { traceId } });
    expect(span).toMatchObject({ status: "ERROR", attributes: { error: "tool exploded" } });
  });
});
