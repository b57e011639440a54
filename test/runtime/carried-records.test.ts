// A tool's result enters the log in one statement that also carries the trace records made before
// it and not written yet — its TOOL_CALL span's start and its input — so that the result costs the
// turn one round trip, not two (src/trace/record/queued-records.ts, sendCarrying). What a separate
// write of those records guaranteed still holds: they read back as if written alone, announced
// after commit; a superseded attempt writes neither them nor the entry and learns why; past the
// trace's bound they are decided record by record, and still before the entry.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createEventBus, type TraceChangeMessage } from "../../src/events/topics.js";
import type { Database } from "../../src/db/open-database.js";
import { PrismaAttemptFence } from "../../src/domain/runs/attempt-fence.js";
import { writeAfter } from "../../src/domain/transaction.js";
import { AttemptFencedError } from "../../src/runtime/ports/attempt-fence.js";
import { appendRows, readLog } from "../../src/runtime/adapters/prisma-conversation-log.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { createBareRun } from "../support/bare-run.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";

/** The statements that write an attempt's trace or log: each carries its fence's check. */
const FENCED_WRITE = /^\s*WITH holder AS/;

describe.each(backends)("a tool result carrying its trace records on %s", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  const statements: string[] = [];
  const events = createEventBus();
  beforeAll(async () => {
    ({ db, dispose } = await openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }));
  });
  afterAll(async () => dispose?.());

  /** A running attempt as the executor writes it: its log after its trace's records (run-executor.ts). */
  async function attempt(maxRecords?: number) {
    const { runId } = await createBareRun(db.prisma, { status: "RUNNING" });
    await db.prisma.run.update({ where: { id: runId }, data: { attempt: 1, leaseOwner: "worker-a" } });
    const { conversationId } = await db.prisma.run.findUniqueOrThrow({ where: { id: runId } });
    const lost = vi.fn();
    const fence = new PrismaAttemptFence(db.prisma, { runId, attempt: 1, workerId: "worker-a" }, lost);
    const recorder = new PrismaTraceRecorder({ prisma: db.prisma, events, maxRecords });
    await recorder.traceFor(runId);
    const sink = recorder.fenced(fence);
    const write = writeAfter({ flushed: () => sink.flushed(), inOrder: sink.inOrder.bind(sink) }, fence.write);
    const heard: TraceChangeMessage[] = [];
    const subscription = events.subscribe("trace:change", runId);
    void (async () => {
      for await (const change of subscription) heard.push(change);
    })();
    const root = await sink.startSpan({ traceId: runId, kind: "RUN", name: "run" });
    const turn = await sink.startSpan({ traceId: runId, parent: root, kind: "TURN", name: "turn 1" });
    await sink.flushed();
    const result = (content: string) =>
      appendRows(write, { conversationId, runId, entries: [{ role: "TOOL", toolCallId: "call_1", toolName: "task_list", content }] });
    return { runId, conversationId, sink, root, turn, result, heard, lost, stop: () => subscription.return?.() };
  }

  it("writes the records made before a result with it, in one statement, each as if written alone", async () => {
    const { runId, conversationId, sink, turn, result, heard, stop } = await attempt();
    const from = statements.length;
    const tool = await sink.startSpan({ traceId: runId, parent: turn, kind: "TOOL_CALL", name: "execute_tool task_list" });
    const input = sink.event(tool, "TOOL_INPUT", '{"action":"list"}');
    const [entry] = await result("no tasks");

    expect(statements.slice(from).filter((sql) => FENCED_WRITE.test(sql))).toHaveLength(1);
    expect(await input).toBe(4);
    const spans = await db.prisma.span.findMany({ where: { traceId: runId }, orderBy: { startedAt: "asc" } });
    expect(spans.map((s) => [s.id, s.kind, s.status])).toEqual([
      [expect.any(String), "RUN", "RUNNING"],
      [turn.id, "TURN", "RUNNING"],
      [tool.id, "TOOL_CALL", "RUNNING"],
    ]);
    const log = await db.prisma.traceChange.findMany({ where: { traceId: runId }, orderBy: { seq: "asc" } });
    expect(log.map((c) => [c.seq, c.type, c.spanId])).toEqual([
      [1, "SPAN_STARTED", spans[0]!.id],
      [2, "SPAN_STARTED", turn.id],
      [3, "SPAN_STARTED", tool.id],
      [4, "EVENT_APPENDED", tool.id],
    ]);
    expect(log[2]!.spanAfter).toEqual({ status: "RUNNING", endedAt: null, usage: null });
    expect((await readLog(db.prisma, conversationId)).map((m) => [m.id, m.content])).toEqual([[entry!.id, "no tasks"]]);
    await vi.waitFor(() => expect(heard.map((c) => c.seq)).toEqual([1, 2, 3, 4]));
    expect(heard[2]!.span).toMatchObject({ id: tool.id, parentId: turn.id, kind: "TOOL_CALL", status: "RUNNING" });

    // What is made after the result is written after it, as before.
    await sink.event(tool, "TOOL_OUTPUT", "no tasks", { messageId: entry!.id });
    await sink.endSpan(tool, { status: "OK" });
    await sink.flushed();
    expect((await db.prisma.trace.findUniqueOrThrow({ where: { id: runId } })).lastSeq).toBe(6);
    await stop();
  });

  it("writes neither the records nor the result of an attempt that lost its run, and stops the attempt saying why", async () => {
    const { runId, conversationId, sink, turn, result, lost, stop } = await attempt();
    await db.prisma.run.update({ where: { id: runId }, data: { attempt: 2, leaseOwner: "worker-b" } });
    const tool = await sink.startSpan({ traceId: runId, parent: turn, kind: "TOOL_CALL", name: "execute_tool task_list" });
    const input = sink.event(tool, "TOOL_INPUT", "{}");
    const late = result("late");
    await expect(late).rejects.toBeInstanceOf(AttemptFencedError);
    await expect(late).rejects.toThrow(/attempt 2 \(worker-b\) holds it now/);
    await expect(input).rejects.toBeInstanceOf(AttemptFencedError);
    await expect(sink.flushed()).rejects.toBeInstanceOf(AttemptFencedError);
    expect(lost).toHaveBeenCalledWith("LEASE_LOST", expect.any(String));
    expect(await db.prisma.span.count({ where: { traceId: runId } })).toBe(2);
    expect(await db.prisma.spanEvent.count({ where: { span: { traceId: runId } } })).toBe(0);
    expect(await readLog(db.prisma, conversationId)).toEqual([]);
    expect((await db.prisma.conversation.findUniqueOrThrow({ where: { id: conversationId } })).messageCount).toBe(0);
    await stop();
  });

  it("past the trace's bound decides the records one by one, and still before the result", async () => {
    const { runId, conversationId, sink, root, turn, result, stop } = await attempt(3);
    const from = statements.length;
    const kept = await sink.startSpan({ traceId: runId, parent: turn, kind: "TOOL_CALL", name: "execute_tool a" });
    const folded = await sink.startSpan({ traceId: runId, parent: turn, kind: "TOOL_CALL", name: "execute_tool b" });
    const dropped = sink.event(folded, "TOOL_INPUT", "{}");
    const [entry] = await result("answered");
    const sent = statements.slice(from);
    expect(await dropped).toBe(0);
    const spans = await db.prisma.span.findMany({ where: { traceId: runId }, orderBy: { startedAt: "asc" } });
    expect(spans.map((s) => [s.id, s.kind])).toEqual([
      [root.id, "RUN"],
      [turn.id, "TURN"],
      [kept.id, "TOOL_CALL"],
    ]);
    const truncated = await db.prisma.spanEvent.findMany({ where: { kind: "TRUNCATED", span: { traceId: runId } } });
    expect(truncated.map((e) => e.spanId)).toEqual([root.id]);
    // The records were written first, one by one; the entry last, alone.
    const appends = sent.map((sql, index) => [index, /INSERT INTO message/.test(sql), /batch_input/.test(sql)] as const);
    const [last] = appends.filter(([, append]) => append).slice(-1);
    expect(last).toEqual([sent.length - 1, true, false]);
    expect(sent.slice(0, -1).filter((sql) => /INSERT INTO span\b|"public"."span"/.test(sql)).length).toBeGreaterThan(0);
    expect((await readLog(db.prisma, conversationId)).map((m) => [m.id, m.content])).toEqual([[entry!.id, "answered"]]);
    await stop();
  });
});
