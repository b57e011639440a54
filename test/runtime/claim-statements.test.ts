// What a claim costs the database: the round trips between a worker's wake-up and its run's
// first model request begin with the claim's transaction, so its statements are pinned here, and
// what it writes is read back: the run's trace with its RUN and ATTEMPT spans and their replay
// log (seq 1 and 2), the attempt's row, and the question entering the conversation's log.
// Claims are made through the run state the worker uses, with no worker running.
import { afterEach, describe, expect, it } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import type { TraceChange } from "../../src/domain/trace/trace-writes.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** A first attempt's claim: BEGIN, the claim, the principal's lock, the run, its conversation's slot, the attempt's beginning, COMMIT. */
const FIRST_CLAIM_STATEMENTS = 7;

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe.each(backends)("a claim's SQL on %s", (backend) => {
  it(`starts a first attempt in ${FIRST_CLAIM_STATEMENTS} statements and writes all of its beginning`, async () => {
    const statements: string[] = [];
    let counting = false;
    t = await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => counting && statements.push(sql) }),
    });
    const announced: TraceChange[] = [];
    const runs = new PrismaRunState({
      prisma: t.app.db.prisma,
      events: createEventBus(),
      trace: { announce: (changes) => announced.push(...changes.filter((c): c is TraceChange => c !== null)), exportEnded: () => undefined },
    });
    const { run } = await admit(t.client, { question: "Which \u200b sources disagree?" });
    const claimOnce = () =>
      runs.claim({
        workerId: "worker-1",
        leaseMs: 60_000,
        leaseMarginMs: 1_000,
        maxRunningPerPrincipal: 4,
        liveness: async () => true,
        describeRun: (r) => ({ name: `run ${r.id}`, attributes: { "dossier.question": r.question } }),
      });
    counting = true;
    const claimed = await claimOnce();
    counting = false;
    expect(claimed?.number).toBe(1);
    expect(statements.filter((sql) => !/^\s*(-- Implicit )?"?(BEGIN|COMMIT)/i.test(sql)).length + 2).toBe(FIRST_CLAIM_STATEMENTS);

    const prisma = t.app.db.prisma;
    const runId = dbId(run.id);
    const trace = await prisma.trace.findUniqueOrThrow({ where: { runId } });
    expect({ lastSeq: trace.lastSeq, records: trace.records }).toEqual({ lastSeq: 2, records: 2 });
    const spans = await prisma.span.findMany({ where: { traceId: trace.id }, orderBy: { startedAt: "asc" } });
    const root = spans.find((s) => s.kind === "RUN")!;
    const attempt = spans.find((s) => s.kind === "ATTEMPT")!;
    expect(spans).toHaveLength(2);
    expect(attempt.parentId).toBe(root.id);
    expect(attempt.attributes).toEqual({ "dossier.attempt": 1, "dossier.instance": "worker-1" });
    expect(root.name).toBe(`run ${runId}`);
    expect(claimed!.root.id).toBe(root.id);
    expect(claimed!.span.id).toBe(attempt.id);
    const changes = await prisma.traceChange.findMany({ where: { traceId: trace.id }, orderBy: { seq: "asc" } });
    expect(changes.map((c) => [c.seq, c.type, c.spanId])).toEqual([
      [1, "SPAN_STARTED", root.id],
      [2, "SPAN_STARTED", attempt.id],
    ]);
    // Live subscribers hear both spans, in order, with the state a later read gives.
    expect(announced.map((c) => [c.seq, c.span?.kind, c.span?.status, c.span?.parentId ?? null])).toEqual([
      [1, "RUN", "RUNNING", null],
      [2, "ATTEMPT", "RUNNING", root.id],
    ]);
    expect(await prisma.runAttempt.findMany({ where: { runId }, select: { number: true, instance: true, spanId: true } })).toEqual([
      { number: 1, instance: "worker-1", spanId: attempt.id },
    ]);
    const { conversationId, question } = await prisma.run.findUniqueOrThrow({ where: { id: runId } });
    const log = await prisma.message.findMany({ where: { conversationId }, orderBy: { seq: "asc" } });
    expect(log.map((m) => [m.seq, m.role, m.content, m.runId])).toEqual([[1, "USER", question, runId]]);
    const { messageCount } = await prisma.conversation.findUniqueOrThrow({ where: { id: conversationId } });
    expect(messageCount).toBe(1);
  });
});
