// What a claim costs the database: the round trips between a worker's wake-up and its run's
// first model request begin with the claim's transaction, so its statements are pinned here, and
// what it writes is read back: the run's trace with its RUN and ATTEMPT spans and their replay
// log (seq 1 and 2), the attempt's row, and the question entering the conversation's log; and
// what the attempt would read next (its log, its requests), which the claim gives back instead.
// A claim of many runs costs the same statements as a claim of one. Claims are made through the
// run state the worker uses, with no worker running.
import { afterEach, describe, expect, it } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import { readLog } from "../../src/runtime/adapters/prisma-conversation-log.js";
import type { TraceChange } from "../../src/domain/trace/trace-writes.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** A claim of first attempts: BEGIN, the claim (the runs as taken, their principals' locks), the attempts' beginning with their slots, COMMIT. */
const FIRST_CLAIM_STATEMENTS = 4;
/** Runs one claim takes at once in the burst below. */
const BURST = 20;

let t: TestApp | undefined;

/** A test app whose statements are counted while `counting.on`, and the run state a worker claims through, announcing to `announced`. */
async function countingClaims(backend: (typeof backends)[number]) {
  const statements: string[] = [];
  const counting = { on: false };
  const app = await startTestApp(backend, {
    database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => counting.on && statements.push(sql) }),
  });
  t = app;
  const announced: TraceChange[] = [];
  const runs = new PrismaRunState({
    prisma: app.app.db.prisma,
    events: createEventBus(),
    trace: { announce: (changes) => announced.push(...changes.filter((c): c is TraceChange => c !== null)), exportEnded: () => undefined },
  });
  return { app, statements, counting, announced, runs };
}
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe.each(backends)("a claim's SQL on %s", (backend) => {
  it(`starts a first attempt in ${FIRST_CLAIM_STATEMENTS} statements and writes all of its beginning`, async () => {
    const { app, statements, counting, announced, runs } = await countingClaims(backend);
    const { run } = await admit(app.client, { question: "Which \u200b sources disagree?" });
    const claimOnce = () =>
      runs.claim({
        workerId: "worker-1",
        leaseMs: 60_000,
        leaseMarginMs: 1_000,
        maxRunningPerPrincipal: 4,
        liveness: async () => true,
        describeRun: (r) => ({ name: `run ${r.id}`, attributes: { "dossier.question": r.question } }),
        modelLabel: "scripted:claims",
      });
    counting.on = true;
    const claimed = await claimOnce();
    counting.on = false;
    expect(claimed?.number).toBe(1);
    // The run comes back as taken, its model recorded; its conversation's lineage (a root's is
    // empty) comes back with the slot, so the attempt reads its log in one statement.
    expect(claimed?.run).toMatchObject({ id: dbId(run.id), status: "RUNNING", attempt: 1, leaseOwner: "worker-1", modelLabel: "scripted:claims" });
    expect(claimed?.lineage).toEqual([]);
    expect(statements.filter((sql) => !/^\s*(-- Implicit )?"?(BEGIN|COMMIT)/i.test(sql)).length + 2).toBe(FIRST_CLAIM_STATEMENTS);

    const prisma = app.app.db.prisma;
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
    const { conversationId, question, modelLabel } = await prisma.run.findUniqueOrThrow({ where: { id: runId } });
    expect(modelLabel).toBe("scripted:claims");
    const log = await prisma.message.findMany({ where: { conversationId }, orderBy: { seq: "asc" } });
    expect(log.map((m) => [m.seq, m.role, m.content, m.runId])).toEqual([[1, "USER", question, runId]]);
    const { messageCount } = await prisma.conversation.findUniqueOrThrow({ where: { id: conversationId } });
    expect(messageCount).toBe(1);
    // What the attempt would read next comes back with the claim, as those reads give it: the
    // log (the question is the conversation's first message) and the run's requests.
    expect(claimed?.log?.map((message) => ({ ...message, spill: null }))).toEqual(await readLog(prisma, conversationId));
    expect(claimed?.requests).toEqual(await runs.requests(runId));
  });

  it(`claims ${BURST} runs in one transaction of the same ${FIRST_CLAIM_STATEMENTS} statements, each with all of its beginning`, async () => {
    const { app, statements, counting, announced, runs } = await countingClaims(backend);
    const admitted = [];
    for (let i = 0; i < BURST + 2; i += 1) admitted.push((await admit(app.client, { question: `question ${i}` })).run);
    counting.on = true;
    const claimed = await runs.claimMany(
      {
        workerId: "worker-1",
        leaseMs: 60_000,
        leaseMarginMs: 1_000,
        maxRunningPerPrincipal: 100,
        liveness: async () => true,
        describeRun: (r) => ({ name: `run ${r.id}`, attributes: {} }),
      },
      BURST,
    );
    counting.on = false;
    expect(statements.filter((sql) => !/^\s*(-- Implicit )?"?(BEGIN|COMMIT)/i.test(sql)).length + 2).toBe(FIRST_CLAIM_STATEMENTS);
    // The oldest runs, oldest first, each its own first attempt with its spans, replay log, attempt row and question.
    const ids = admitted.slice(0, BURST).map((run) => dbId(run.id));
    expect(claimed.map((c) => c.run.id)).toEqual(ids);
    const prisma = app.app.db.prisma;
    const traces = await prisma.trace.findMany({ where: { runId: { in: ids } }, select: { lastSeq: true, records: true } });
    expect(traces).toEqual(ids.map(() => ({ lastSeq: 2, records: 2 })));
    for (const c of claimed) {
      const spans = await prisma.span.findMany({ where: { traceId: c.run.id }, select: { id: true, kind: true, parentId: true } });
      expect(spans.sort((a, b) => a.kind.localeCompare(b.kind))).toEqual([
        { id: c.span.id, kind: "ATTEMPT", parentId: c.root.id },
        { id: c.root.id, kind: "RUN", parentId: null },
      ]);
      const log = await prisma.message.findMany({ where: { conversationId: c.run.conversationId } });
      expect(log.map((m) => [m.seq, m.role, m.content, m.runId])).toEqual([[1, "USER", c.run.question, c.run.id]]);
      const conversation = await prisma.conversation.findUniqueOrThrow({ where: { id: c.run.conversationId } });
      expect(conversation).toMatchObject({ activeRunId: c.run.id, messageCount: 1 });
    }
    expect(await prisma.runAttempt.count({ where: { runId: { in: ids }, number: 1, instance: "worker-1" } })).toBe(BURST);
    expect(announced).toHaveLength(2 * BURST);
    const rest = await prisma.run.findMany({ where: { id: { in: admitted.slice(BURST).map((run) => dbId(run.id)) } }, select: { status: true } });
    expect(rest).toEqual([{ status: "QUEUED" }, { status: "QUEUED" }]);
  });
});
