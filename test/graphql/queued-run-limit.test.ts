// MAX_QUEUED_RUNS_PER_PRINCIPAL: a principal with that many runs QUEUED is refused one more with a
// QueueFullError naming the limit, on every path that admits a run (a new conversation in one
// statement, an existing conversation in a transaction, a schedule's fire, recorded FAILED), and
// nothing of the refused admission is written. A run that leaves QUEUED (cancelled, claimed) frees
// a place; another principal is not affected; a retry with the key of an admission that committed
// still answers its run. Pausing a queued run frees its place; resuming it takes one again, refused
// the same way when none is left. Concurrent admissions at the limit admit exactly as many runs as fit,
// and an admission does not wait for a transaction that takes the principal's runs out of QUEUED.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AdmitRunDocument,
  type AdmitRunInput,
  CancelRunDocument,
  CreateScheduleDocument,
  PauseRunDocument,
  ResumeRunDocument,
  TriggerScheduleDocument,
} from "../../sdk/generated/graphql.js";
import type { DossierClient } from "../../sdk/client.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import { createEventBus } from "../../src/events/topics.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType, startConversation } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { SETTLE_CLAIMANT } from "../support/settle-claimant.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const LIMIT = 3;
/** The count of a principal's ($1) QUEUED runs its queue rows hold: entered − exited. */
const COUNTED_SQL = `SELECT (q.entered - coalesce((SELECT x.exited FROM principal_queue_exit x WHERE x.principal_id = q.principal_id), 0))::int
    FROM principal_queue q WHERE q.principal_id = $1`;
const countedOf = async (t: TestApp, ownerId: string) =>
  (await t.app.db.prisma.$queryRawUnsafe<{ queued: number }[]>(`SELECT (${COUNTED_SQL}) AS queued`, ownerId))[0];

const admitRun = async (client: DossierClient, input: AdmitRunInput) => (await client.request(AdmitRunDocument, { input })).admitRun;

describe.each(backends)("the queued-run limit on %s", (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { maxQueuedRunsPerPrincipal: LIMIT });
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A new principal's client and id. */
  const principal = async (name: string) => {
    const client = t.as(await t.createPrincipal(name));
    const first = await admit(client, { question: "first" });
    const ownerId = (await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: dbId(first.run.id) } })).ownerId;
    return { client, ownerId, first: first.run.id };
  };
  const queuedOf = (ownerId: string) => t.app.db.prisma.run.count({ where: { ownerId, status: "QUEUED" } });
  const written = async (ownerId: string) => ({
    runs: await t.app.db.prisma.run.count({ where: { ownerId } }),
    conversations: await t.app.db.prisma.conversation.count({ where: { ownerId } }),
    keys: await t.app.db.prisma.idempotencyKey.count({ where: { principalId: ownerId } }),
  });
  const fill = async (client: DossierClient, count: number) => {
    for (let i = 0; i < count; i++) await admit(client, { question: `queued ${i}` });
  };

  it("refuses the run after the limit with a QueueFullError naming it, on either admission path, writing nothing; another principal is not held", async () => {
    const a = await principal("A");
    await fill(a.client, LIMIT - 1);
    expect(await queuedOf(a.ownerId)).toBe(LIMIT);
    const before = await written(a.ownerId);

    const plain = expectType(await admitRun(a.client, { question: "one too many", idempotencyKey: "over" }), "QueueFullError");
    expect(plain.maxQueuedRuns).toBe(LIMIT);
    expect(plain.message).toContain(`${LIMIT} runs queued`);
    const conversation = await startConversation(a.client);
    const before2 = await written(a.ownerId);
    const enqueued = await admitRun(a.client, {
      conversationId: conversation.id,
      question: "into a conversation",
      multitask: "ENQUEUE",
      idempotencyKey: "over-2",
    });
    expect(expectType(enqueued, "QueueFullError").maxQueuedRuns).toBe(LIMIT);
    expect(await written(a.ownerId)).toEqual({ ...before, conversations: before2.conversations });
    expect(await queuedOf(a.ownerId)).toBe(LIMIT);

    const b = await principal("B");
    await fill(b.client, LIMIT - 1);
    expect(await queuedOf(b.ownerId)).toBe(LIMIT);
  });

  it("answers a retry with the key of an admission that committed with its run, the queue full or not", async () => {
    const a = await principal("Retrying");
    const conversation = await startConversation(a.client);
    const keyed = await admit(a.client, { question: "keyed", idempotencyKey: "k-plain" });
    const inConversation = await admit(a.client, { conversationId: conversation.id, question: "keyed too", idempotencyKey: "k-conversation" });
    expect(await queuedOf(a.ownerId)).toBe(LIMIT);

    const again = await admit(a.client, { question: "keyed", idempotencyKey: "k-plain" });
    expect([again.run.id, again.replayed]).toEqual([keyed.run.id, true]);
    const againInConversation = await admit(a.client, { conversationId: conversation.id, question: "keyed too", idempotencyKey: "k-conversation" });
    expect([againInConversation.run.id, againInConversation.replayed]).toEqual([inConversation.run.id, true]);
    // A key not used before is a new admission: refused.
    expect((await admitRun(a.client, { question: "keyed", idempotencyKey: "k-new" })).__typename).toBe("QueueFullError");
    expect(await queuedOf(a.ownerId)).toBe(LIMIT);
  });

  it("frees a place when a queued run is cancelled or claimed, and only one", async () => {
    const a = await principal("Freed");
    await fill(a.client, LIMIT - 1);
    expect((await admitRun(a.client, { question: "full" })).__typename).toBe("QueueFullError");

    expectType((await a.client.request(CancelRunDocument, { input: { runId: a.first } })).cancelRun, "CancelRunSuccess");
    // Cancelling it again frees nothing more.
    await a.client.request(CancelRunDocument, { input: { runId: a.first } });
    const afterCancel = await admit(a.client, { question: "after a cancellation" });
    expect((await admitRun(a.client, { question: "full again" })).__typename).toBe("QueueFullError");

    const runs = new PrismaRunState({ prisma: t.app.db.prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
    expect((await runs.claim(SETTLE_CLAIMANT, dbId(afterCancel.run.id)))?.run.id).toBe(dbId(afterCancel.run.id));
    await admit(a.client, { question: "after a claim" });
    expect((await admitRun(a.client, { question: "full once more" })).__typename).toBe("QueueFullError");

    const counted = await countedOf(t, a.ownerId);
    expect(counted?.queued).toBe(LIMIT);
    expect(await queuedOf(a.ownerId)).toBe(LIMIT);
  });

  it("refuses to resume a paused run into a full queue with a QueueFullError naming the limit, the run still paused; resumes it once a place is free", async () => {
    const a = await principal("Pausing");
    const paused = [a.first];
    for (let i = 1; i < LIMIT; i++) paused.push((await admit(a.client, { question: `to pause ${i}` })).run.id);
    for (const runId of paused) expectType((await a.client.request(PauseRunDocument, { input: { runId } })).pauseRun, "PauseRunSuccess");
    expect(await queuedOf(a.ownerId)).toBe(0);
    const queued: string[] = [];
    for (let i = 0; i < LIMIT; i++) queued.push((await admit(a.client, { question: `queued while paused ${i}` })).run.id);
    const pausedRows = () =>
      t.app.db.prisma.run.findMany({
        where: { id: { in: paused.map(dbId) } },
        select: { id: true, status: true, pausedAt: true, deadlineAt: true },
        orderBy: { id: "asc" },
      });
    const before = await pausedRows();

    for (const runId of paused) {
      const refused = expectType((await a.client.request(ResumeRunDocument, { input: { runId } })).resumeRun, "QueueFullError");
      expect(refused.maxQueuedRuns).toBe(LIMIT);
      expect(refused.message).toContain(`${LIMIT} runs queued`);
    }
    expect(await pausedRows()).toEqual(before);
    expect(before.map((run) => run.status)).toEqual(Array(LIMIT).fill("PAUSED"));
    expect(await queuedOf(a.ownerId)).toBe(LIMIT);

    expectType((await a.client.request(CancelRunDocument, { input: { runId: queued[0]! } })).cancelRun, "CancelRunSuccess");
    const resumed = expectType((await a.client.request(ResumeRunDocument, { input: { runId: paused[0]! } })).resumeRun, "ResumeRunSuccess");
    expect([resumed.run.status, resumed.run.pausedAt]).toEqual(["QUEUED", null]);
    expect((await a.client.request(ResumeRunDocument, { input: { runId: paused[1]! } })).resumeRun.__typename).toBe("QueueFullError");
    const counted = await countedOf(t, a.ownerId);
    expect([await queuedOf(a.ownerId), counted?.queued]).toEqual([LIMIT, LIMIT]);
  });

  it("records a schedule's fire beyond the limit FAILED with the refusal's message, and admits the next one once there is room", async () => {
    const a = await principal("Scheduling");
    const workspace = await createWorkspace(a.client);
    const created = await a.client.request(CreateScheduleDocument, {
      input: { workspaceId: workspace.id, question: "scheduled", intervalSeconds: 3_600, overlap: "ENQUEUE" },
    });
    const schedule = expectType(created.createSchedule, "CreateScheduleSuccess").schedule;
    await fill(a.client, LIMIT - 1);

    const refused = expectType((await a.client.request(TriggerScheduleDocument, { input: { id: schedule.id } })).triggerSchedule, "TriggerScheduleSuccess");
    expect([refused.fire.status, refused.fire.run]).toEqual(["FAILED", null]);
    expect(refused.fire.reason).toContain(`${LIMIT} runs queued`);
    expect(await queuedOf(a.ownerId)).toBe(LIMIT);

    expectType((await a.client.request(CancelRunDocument, { input: { runId: a.first } })).cancelRun, "CancelRunSuccess");
    const admitted = expectType((await a.client.request(TriggerScheduleDocument, { input: { id: schedule.id } })).triggerSchedule, "TriggerScheduleSuccess");
    expect([admitted.fire.status, admitted.fire.run?.status]).toEqual(["ADMITTED", "QUEUED"]);
    expect(await queuedOf(a.ownerId)).toBe(LIMIT);
  });
});

describe.runIf(backends.includes("postgres"))("admission and a run leaving QUEUED on PostgreSQL", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("postgres", { maxQueuedRunsPerPrincipal: LIMIT });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("admits while a transaction that takes one of the principal's runs out of QUEUED (a claim's) has not committed, and counts both once it has", async () => {
    const client = t.as(await t.createPrincipal("Claimed"));
    const first = await admit(client, { question: "taken out of QUEUED" });
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => (commit = resolve));
    let changed!: () => void;
    const outOfQueue = new Promise<void>((resolve) => (changed = resolve));
    const holding = t.app.db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe("UPDATE run SET status = 'PAUSED', paused_at = now() WHERE id = $1", dbId(first.run.id));
      changed();
      await committing;
    });
    await outOfQueue;
    const admission = admitRun(client, { question: "admitted meanwhile" });
    const answered = await Promise.race([admission, new Promise<"still waiting">((resolve) => setTimeout(() => resolve("still waiting"), 3_000))]);
    commit();
    await holding;
    expect(answered === "still waiting" ? answered : answered.__typename).toBe("AdmitRunSuccess");
    const ownerId = (await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: dbId(first.run.id) } })).ownerId;
    expect((await countedOf(t, ownerId))?.queued).toBe(1);
    expect(await t.app.db.prisma.run.count({ where: { ownerId, status: "QUEUED" } })).toBe(1);
  });
});

describe.each(backends)("concurrent admissions at the queued-run limit on %s", (backend) => {
  const limit = 5;
  const attempts = 40;
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp(backend, { maxQueuedRunsPerPrincipal: limit, database: () => openMigratedTestDatabase(backend, { poolSize: 20 }) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it(`admit exactly ${limit} of ${attempts} sent at once, by either path; the rest are QueueFullErrors`, async () => {
    const a = t.as(await t.createPrincipal("Crowd"));
    const b = t.as(await t.createPrincipal("Bystander"));
    const conversations = await Promise.all(Array.from({ length: attempts / 2 }, () => startConversation(a)));
    const sent = [
      ...Array.from({ length: attempts / 2 }, (_, i) => admitRun(a, { question: `plain ${i}` })),
      ...conversations.map((conversation, i) => admitRun(a, { conversationId: conversation.id, question: `enqueued ${i}`, multitask: "ENQUEUE" })),
      // Another principal's admissions among them, each admitted.
      ...Array.from({ length: limit }, (_, i) => admitRun(b, { question: `bystander ${i}` })),
    ];
    const results = (await Promise.all(sent)).map((result) => result.__typename);
    const mine = results.slice(0, attempts);
    expect(mine.filter((name) => name === "AdmitRunSuccess")).toHaveLength(limit);
    expect(mine.filter((name) => name === "QueueFullError")).toHaveLength(attempts - limit);
    expect(results.slice(attempts)).toEqual(Array(limit).fill("AdmitRunSuccess"));

    const counts = await t.app.db.prisma.$queryRawUnsafe<{ queued: number; counted: number }[]>(
      `SELECT count(*)::int AS queued, (${COUNTED_SQL.replace("$1", "r.owner_id")}) AS counted
         FROM run r WHERE r.status = 'QUEUED' GROUP BY r.owner_id ORDER BY 1`,
    );
    expect(counts).toEqual([
      { queued: limit, counted: limit },
      { queued: limit, counted: limit },
    ]);
  });
});
