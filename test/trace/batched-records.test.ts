// An attempt's trace records queued next to each other — a span's end, the next span's start, the
// note between, events — are written in one statement (src/trace/record/queued-records.ts), and
// read back exactly as if each had been written alone: the same rows, seq numbers in the order
// they were made, the same replay log, announced after commit in seq order. Past the trace's bound
// the records are decided one by one, as before.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createEventBus, type TraceChangeMessage } from "../../src/events/topics.js";
import type { Database } from "../../src/db/open-database.js";
import { PrismaAttemptFence } from "../../src/domain/runs/attempt-fence.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { createBareRun } from "../support/bare-run.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";

/** The statements that write an attempt's trace: each carries its fence's check. */
const TRACE_WRITE = /^\s*WITH holder AS/;

describe.each(backends)("an attempt's queued trace records on %s", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  const statements: string[] = [];
  const events = createEventBus();
  beforeAll(async () => {
    ({ db, dispose } = await openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }));
  });
  afterAll(async () => dispose?.());

  async function attempt(maxRecords?: number) {
    const recorder = new PrismaTraceRecorder({ prisma: db.prisma, events, maxRecords });
    const { runId } = await createBareRun(db.prisma);
    await recorder.traceFor(runId);
    await db.prisma.run.update({ where: { id: runId }, data: { status: "RUNNING", attempt: 1, leaseOwner: "worker-a" } });
    const fenced = recorder.fenced(new PrismaAttemptFence(db.prisma, { runId, attempt: 1, workerId: "worker-a" }, vi.fn()));
    const heard: TraceChangeMessage[] = [];
    const subscription = events.subscribe("trace:change", runId);
    void (async () => {
      for await (const change of subscription) heard.push(change);
    })();
    return { runId, fenced, heard, stop: () => subscription.return?.() };
  }

  it("writes a turn's records made one after the other in one statement, each with its seq, as if written alone", async () => {
    const { runId, fenced, heard, stop } = await attempt();
    const root = await fenced.startSpan({ traceId: runId, kind: "RUN", name: "run" });
    const turn = await fenced.startSpan({ traceId: runId, parent: root, kind: "TURN", name: "turn 1" });
    const tool = await fenced.startSpan({ traceId: runId, parent: turn, kind: "TOOL_CALL", name: "execute_tool task_list" });
    await fenced.flushed!();

    // The end of a turn and the start of the next, as the runtime makes them.
    const from = statements.length;
    const output = fenced.event(tool, "TOOL_OUTPUT", "3 tasks");
    await fenced.endSpan(tool, { status: "OK" });
    await fenced.endSpan(turn, { status: "OK" });
    const next = await fenced.startSpan({ traceId: runId, parent: root, kind: "TURN", name: "turn 2" });
    const budget = fenced.event(next, "BUDGET", { estimate: 120 });
    const call = await fenced.startSpan({ traceId: runId, parent: next, kind: "MODEL_CALL", name: "chat stub", attributes: { request: "hi" } });
    const thinking = fenced.event(call, "THINKING", "considering");
    await fenced.endSpan(call, { status: "ERROR" });
    await fenced.flushed!();

    expect(statements.slice(from).filter((sql) => TRACE_WRITE.test(sql))).toHaveLength(1);
    expect(await Promise.all([output, budget, thinking])).toEqual([4, 8, 10]);
    const spans = await db.prisma.span.findMany({ where: { traceId: runId }, orderBy: { startedAt: "asc" } });
    expect(spans.map((s) => [s.id, s.parentId, s.kind, s.status, s.endedAt !== null, s.attributes])).toEqual([
      [root.id, null, "RUN", "RUNNING", false, {}],
      [turn.id, root.id, "TURN", "OK", true, {}],
      [tool.id, turn.id, "TOOL_CALL", "OK", true, {}],
      [next.id, root.id, "TURN", "RUNNING", false, {}],
      [call.id, next.id, "MODEL_CALL", "ERROR", true, { request: "hi" }],
    ]);
    const stored = await db.prisma.spanEvent.findMany({ where: { span: { traceId: runId } }, orderBy: { seq: "asc" } });
    expect(stored.map((e) => [e.seq, e.spanId, e.kind, e.payload])).toEqual([
      [4, tool.id, "TOOL_OUTPUT", "3 tasks"],
      [8, next.id, "BUDGET", JSON.stringify({ estimate: 120 })],
      [10, call.id, "THINKING", "considering"],
    ]);
    const log = await db.prisma.traceChange.findMany({ where: { traceId: runId }, orderBy: { seq: "asc" } });
    const expected = [
      [1, "SPAN_STARTED", root.id],
      [2, "SPAN_STARTED", turn.id],
      [3, "SPAN_STARTED", tool.id],
      [4, "EVENT_APPENDED", tool.id],
      [5, "SPAN_ENDED", tool.id],
      [6, "SPAN_ENDED", turn.id],
      [7, "SPAN_STARTED", next.id],
      [8, "EVENT_APPENDED", next.id],
      [9, "SPAN_STARTED", call.id],
      [10, "EVENT_APPENDED", call.id],
      [11, "SPAN_ENDED", call.id],
    ];
    expect(log.map((c) => [c.seq, c.type, c.spanId])).toEqual(expected);
    expect((await db.prisma.trace.findUniqueOrThrow({ where: { id: runId } })).lastSeq).toBe(11);
    // A replayed change shows the span as it was then: the model call running at its start, ended at its end.
    expect(log[8]!.spanAfter).toEqual({ status: "RUNNING", endedAt: null, usage: null });
    expect(log[10]!.spanAfter).toEqual({ status: "ERROR", endedAt: spans[4]!.endedAt!.toISOString(), usage: null });
    expect(log[4]!.spanAfter).toEqual({ status: "OK", endedAt: spans[2]!.endedAt!.toISOString(), usage: null });

    // Announced after commit, in seq order, each once, each with the span as of its change.
    await vi.waitFor(() => expect(heard).toHaveLength(11));
    expect(heard.map((c) => [c.seq, c.type, c.spanId])).toEqual(expected);
    expect(heard[4]!.span).toMatchObject({ id: tool.id, parentId: turn.id, kind: "TOOL_CALL", status: "OK", endedAt: log[4]!.at.toISOString() });
    expect(heard[8]!.span).toMatchObject({ id: call.id, status: "RUNNING", endedAt: null, attributes: { request: "hi" } });
    expect(heard[10]!.span).toMatchObject({ id: call.id, status: "ERROR", attributes: { request: "hi" } });
    await stop();
  });

  it("past the trace's bound decides each record as when written alone: spans kept up to it, the rest folded, one TRUNCATED event", async () => {
    const { runId, fenced, stop } = await attempt(4);
    const root = await fenced.startSpan({ traceId: runId, kind: "RUN", name: "run" });
    const turn = await fenced.startSpan({ traceId: runId, parent: root, kind: "TURN", name: "turn 1" });
    await fenced.flushed!();
    const first = fenced.event(turn, "BUDGET", { estimate: 1 });
    const tool = await fenced.startSpan({ traceId: runId, parent: turn, kind: "TOOL_CALL", name: "execute_tool a" });
    const dropped = fenced.event(tool, "TOOL_OUTPUT", "dropped");
    const folded = await fenced.startSpan({ traceId: runId, parent: turn, kind: "TOOL_CALL", name: "execute_tool b" });
    await fenced.endSpan(folded, { status: "OK" });
    await fenced.endSpan(tool, { status: "OK" });
    await fenced.flushed!();
    expect(await Promise.all([first, dropped])).toEqual([3, 0]);
    const spans = await db.prisma.span.findMany({ where: { traceId: runId }, orderBy: { startedAt: "asc" } });
    expect(spans.map((s) => [s.name, s.status])).toEqual([
      ["run", "RUNNING"],
      ["turn 1", "RUNNING"],
      ["execute_tool a", "OK"],
    ]);
    const log = await db.prisma.traceChange.findMany({ where: { traceId: runId }, orderBy: { seq: "asc" } });
    expect(log.map((c) => c.type)).toEqual(["SPAN_STARTED", "SPAN_STARTED", "EVENT_APPENDED", "SPAN_STARTED", "EVENT_APPENDED", "SPAN_ENDED"]);
    const truncated = await db.prisma.spanEvent.findMany({ where: { kind: "TRUNCATED", span: { traceId: runId } } });
    expect(truncated.map((e) => [e.spanId, e.seq])).toEqual([[root.id, 5]]);
    await stop();
  });
});
