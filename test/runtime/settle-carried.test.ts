// A run that answered ends with its last trace records — the final reply's event, its turn's end,
// queued behind the attempt's work — carried in its settle's one statement (settle-statement.ts,
// AttemptFence.writesAfter), not written in a round trip of their own first. What that write
// guaranteed still holds: the rows read back exactly as when the records are written first and the
// run settled after them (same seq numbers, gap-free, same order), subscribers hear the records'
// changes before the settle's, and an attempt that lost its run writes neither and learns why.
import { afterEach, describe, expect, it } from "vitest";
import { AttemptFencedError, PrismaAttemptFence } from "../../src/domain/runs/attempt-fence.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import { createEventBus, type TraceChangeMessage } from "../../src/events/topics.js";
import { PrismaSpillStore } from "../../src/runtime/adapters/prisma-spill-store.js";
import type { SettleStep } from "../../src/domain/runs/vocabulary.js";
import { silentLogger } from "../../src/logger.js";
import { settleOutcome } from "../../src/runtime/attempt/settle-outcome.js";
import { settleStepsOf } from "../../src/runtime/runtime.js";
import { PrismaTraceRecorder } from "../../src/trace/record/prisma-trace-recorder.js";
import { type Backend, backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { SETTLE_CLAIMANT } from "../support/settle-claimant.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const CLAIMANT = SETTLE_CLAIMANT;

/** A statement that writes the run's end. */
const ENDS_THE_RUN = /\bfinished_at\b/;

/**
 * Claims a run, queues its turn's end as the executor does after a final reply, and settles it:
 * `carried`, the records left queued for the settle to carry; else written first, then the settle.
 */
async function answerAndSettle(app: TestApp, statements: string[], carried: boolean, { takenOver = false, leftOpen = false, failingStep = false } = {}) {
  const prisma = app.app.db.prisma;
  const events = createEventBus();
  const recorder = new PrismaTraceRecorder({ prisma, events });
  const runs = new PrismaRunState({ prisma, events, trace: recorder });
  const { run } = await admit(app.client, { question: "Plan the week." });
  const runId = dbId(run.id);
  const claimed = await runs.claim(CLAIMANT, runId);
  if (!claimed) throw new Error("the run was not claimed");
  const lost: string[] = [];
  const fence = new PrismaAttemptFence(prisma, { runId, attempt: claimed.number, workerId: CLAIMANT.workerId }, (reason) => lost.push(reason));
  const sink = recorder.fenced(fence);
  const turn = await sink.startSpan({ traceId: runId, parent: claimed.span, kind: "TURN", name: "turn 1" });
  // Something left to decide at the end: a span nobody ended.
  if (leftOpen) await sink.startSpan({ traceId: runId, parent: claimed.span, kind: "MCP_CALL", name: "mcp listing" });
  await sink.flushed();
  const heard: TraceChangeMessage[] = [];
  const subscription = events.subscribe("trace:change", runId);
  void (async () => {
    for await (const change of subscription) heard.push(change);
  })();
  if (takenOver) await prisma.run.update({ where: { id: runId }, data: { attempt: claimed.number + 1, leaseOwner: "worker-2" } });
  const from = statements.length;
  // What the executor does once the model's reply is logged (run-executor.ts): neither write waited for.
  const written = sink.event(turn, "FINAL_REPLY", "The week is planned.");
  written.catch(() => undefined);
  await sink.endSpan(turn, { status: "OK" });
  if (carried) fence.writesAfter({ flushed: () => sink.flushed(), inOrder: sink.inOrder.bind(sink) });
  else await sink.flushed();
  const steps: SettleStep[] = [...settleStepsOf(app.app.services, new PrismaSpillStore(prisma))];
  if (failingStep) steps.push(failsInTheDatabase());
  const answered = { type: "final" as const, answer: "The week is planned." };
  const settled = failingStep
    ? settleOutcome({ runs, steps, logger: silentLogger }, claimed, fence, answered).then(({ status }) => status)
    : runs.settle(claimed, fence, answered, steps);
  return { runId, claimed, turn, settled, written, heard, lost, sent: () => statements.slice(from), stop: () => subscription.return?.() };
}

/** A settle step the database refuses, in the settle's statement and in its transaction alike. */
function failsInTheDatabase(): SettleStep {
  const step: SettleStep = async ({ tx }) => {
    await tx.$executeRawUnsafe("SELECT 'not a status'::\"RunStatus\"");
  };
  step.inStatement = () => ({ publication: { outcome: "NOT A PUBLICATION OUTCOME" as "NO_WORKSPACE", reason: "refused" } });
  return step;
}

/** A test app on `backend` (into `t`), and every statement its database answers, in order. */
async function countingApp(backend: Backend): Promise<{ app: TestApp; statements: string[] }> {
  const statements: string[] = [];
  const app = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
  t = app;
  return { app, statements };
}

/** What a settled run's trace reads back as, its spans by kind (the ids and times of two runs differ). */
async function traceOf(app: TestApp, runId: string) {
  const prisma = app.app.db.prisma;
  const spans = await prisma.span.findMany({ where: { traceId: runId }, orderBy: [{ startedAt: "asc" }, { kind: "asc" }] });
  const kind = new Map(spans.map((span) => [span.id, span.kind]));
  const changes = await prisma.traceChange.findMany({ where: { traceId: runId }, orderBy: { seq: "asc" } });
  const events = await prisma.spanEvent.findMany({ where: { span: { traceId: runId } }, orderBy: { seq: "asc" } });
  return {
    trace: await prisma.trace.findUniqueOrThrow({ where: { id: runId }, select: { lastSeq: true, records: true, endedAt: true } }).then((t) => ({
      lastSeq: t.lastSeq,
      records: t.records,
      ended: t.endedAt !== null,
    })),
    spans: spans.map((span) => ({ kind: span.kind, status: span.status, ended: span.endedAt !== null, usage: span.usage })),
    changes: changes.map((change) => ({
      seq: change.seq,
      type: change.type,
      span: change.spanId && kind.get(change.spanId),
      status: (change.spanAfter as { status?: string } | null)?.status ?? null,
    })),
    events: events.map((event) => ({ seq: event.seq, kind: event.kind, span: kind.get(event.spanId), payload: event.payload, preview: event.preview })),
    run: await prisma.run.findUniqueOrThrow({ where: { id: runId }, select: { status: true, answer: true, leaseOwner: true } }),
  };
}

describe.each(backends)("a run's last trace records carried in its settle, on %s", (backend) => {
  it("are written in the settle's one statement, the rows and what subscribers hear as when written first", async () => {
    const { app, statements } = await countingApp(backend);
    const one = await answerAndSettle(app, statements, true);
    expect(await one.settled).toBe("SUCCEEDED");
    // The end after the answer is one statement: the records ride in the settle.
    expect(one.sent()).toHaveLength(1);
    expect(one.sent()[0]).toMatch(ENDS_THE_RUN);
    expect(await one.written).toBe(4);

    const apart = await answerAndSettle(app, statements, false);
    expect(await apart.settled).toBe("SUCCEEDED");
    expect(apart.sent().filter((sql) => !/^\s*(BEGIN|COMMIT)\b/.test(sql))).toHaveLength(2);

    const carried = await traceOf(app, one.runId);
    expect(carried).toEqual(await traceOf(app, apart.runId));
    expect(carried.changes).toEqual([
      { seq: 1, type: "SPAN_STARTED", span: "RUN", status: "RUNNING" },
      { seq: 2, type: "SPAN_STARTED", span: "ATTEMPT", status: "RUNNING" },
      { seq: 3, type: "SPAN_STARTED", span: "TURN", status: "RUNNING" },
      { seq: 4, type: "EVENT_APPENDED", span: "TURN", status: null },
      { seq: 5, type: "SPAN_ENDED", span: "TURN", status: "OK" },
      { seq: 6, type: "SPAN_ENDED", span: "ATTEMPT", status: "OK" },
      { seq: 7, type: "SPAN_ENDED", span: "RUN", status: "OK" },
      { seq: 8, type: "TRACE_ENDED", span: null, status: null },
    ]);
    expect(carried.trace).toEqual({ lastSeq: 8, records: 4, ended: true });
    expect(carried.events).toEqual([{ seq: 4, kind: "FINAL_REPLY", span: "TURN", payload: "The week is planned.", preview: "The week is planned." }]);
    // Announced after commit, in seq order: the final reply and the turn's end before the run's end.
    for (const ran of [one, apart]) {
      await expect
        .poll(() => ran.heard.map((change) => [change.seq, change.type]))
        .toEqual([
          [4, "EVENT_APPENDED"],
          [5, "SPAN_ENDED"],
          [6, "SPAN_ENDED"],
          [7, "SPAN_ENDED"],
          [8, "TRACE_ENDED"],
        ]);
      ran.stop();
    }
  });

  it("writes neither the records nor the end for an attempt that lost its run, and says so", async () => {
    const { app, statements } = await countingApp(backend);
    const lost = await answerAndSettle(app, statements, true, { takenOver: true });
    await expect(lost.settled).rejects.toBeInstanceOf(AttemptFencedError);
    expect(lost.lost).toEqual(["LEASE_LOST"]);
    await expect(lost.written).rejects.toBeInstanceOf(AttemptFencedError);
    const trace = await traceOf(app, lost.runId);
    expect(trace.run).toEqual({ status: "RUNNING", answer: null, leaseOwner: "worker-2" });
    expect(trace.trace).toEqual({ lastSeq: 3, records: 3, ended: false });
    expect(trace.events).toEqual([]);
    expect(trace.spans.map((span) => [span.kind, span.status])).toEqual([
      ["RUN", "RUNNING"],
      ["ATTEMPT", "RUNNING"],
      ["TURN", "RUNNING"],
    ]);
    lost.stop();
  });

  it("keeps the records when the settle carrying them fails for a reason of its own, and the run ends FAILED after them", async () => {
    const { app, statements } = await countingApp(backend);
    const failed = await answerAndSettle(app, statements, true, { failingStep: true });
    expect(await failed.settled).toBe("FAILED");
    expect(await failed.written).toBe(4);
    const trace = await traceOf(app, failed.runId);
    expect(trace.run.status).toBe("FAILED");
    // The reply and its turn's end, as the answer left them; not a turn interrupted by the run's end.
    expect(trace.events).toEqual([{ seq: 4, kind: "FINAL_REPLY", span: "TURN", payload: "The week is planned.", preview: "The week is planned." }]);
    expect(trace.changes.slice(3, 5)).toEqual([
      { seq: 4, type: "EVENT_APPENDED", span: "TURN", status: null },
      { seq: 5, type: "SPAN_ENDED", span: "TURN", status: "OK" },
    ]);
    expect(trace.spans.find((span) => span.kind === "TURN")?.status).toBe("OK");
    failed.stop();
  });

  it("leaves the end with something left to decide to the statements one by one, after the records, as when written first", async () => {
    const { app, statements } = await countingApp(backend);
    const one = await answerAndSettle(app, statements, true, { leftOpen: true });
    expect(await one.settled).toBe("SUCCEEDED");
    const apart = await answerAndSettle(app, statements, false, { leftOpen: true });
    expect(await apart.settled).toBe("SUCCEEDED");
    const carried = await traceOf(app, one.runId);
    expect(carried).toEqual(await traceOf(app, apart.runId));
    expect(carried.changes.slice(4, 6)).toEqual([
      { seq: 5, type: "EVENT_APPENDED", span: "TURN", status: null },
      { seq: 6, type: "SPAN_ENDED", span: "TURN", status: "OK" },
    ]);
    expect(carried.spans.map((span) => [span.kind, span.status])).toEqual([
      ["RUN", "OK"],
      ["ATTEMPT", "OK"],
      ["TURN", "OK"],
      ["MCP_CALL", expect.not.stringMatching(/^RUNNING$/)],
    ]);
    expect(carried.trace.ended).toBe(true);
    one.stop();
    apart.stop();
  });
});
