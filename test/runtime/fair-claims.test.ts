// Fair claiming (issue 36): workers claim runs whose lease expired first, then queued runs of the
// principal with the fewest running runs (that principal's highest priority first), then of the
// principal with fewer runs waiting, then oldest;
// a principal at MAX_RUNNING_RUNS_PER_PRINCIPAL gets none of their queued runs claimed, even by
// workers claiming at the same moment. Claims are made through the run state the worker uses,
// with no worker running, so each claim's choice is seen one at a time.
import { afterEach, describe, expect, it } from "vitest";
import { createEventBus } from "../../src/events/topics.js";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { batchClaims } from "../support/batch-claims.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

function runState(prisma: PrismaClient) {
  const runs = new PrismaRunState({ prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
  let n = 0;
  return async (maxRunningPerPrincipal: number) => {
    n += 1;
    const claimed = await runs.claim({
      workerId: `worker-${n}`,
      leaseMs: 60_000,
      leaseMarginMs: 1_000,
      maxRunningPerPrincipal,
      liveness: async () => true,
      describeRun: (run) => ({ name: run.question, attributes: {} }),
    });
    return claimed?.run.question ?? null;
  };
}

async function principals(app: TestApp) {
  const [a, b] = [app.as(await app.createPrincipal("A")), app.as(await app.createPrincipal("B"))];
  return { a, b };
}

/** A's backlog of four (one urgent), then B's two. */
async function admitBacklogs(app: TestApp): Promise<Awaited<ReturnType<typeof principals>>> {
  const { a, b } = await principals(app);
  for (const question of ["a1", "a2"]) await admit(a, { question });
  await admit(a, { question: "a3 urgent", priority: 5 });
  await admit(a, { question: "a4" });
  await admit(b, { question: "b1" });
  await admit(b, { question: "b2" });
  return { a, b };
}

describe.each(backends)("fair claims on %s", (backend) => {
  it("interleaves principals, orders each one's runs by priority then age, and resumes expired leases first", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const { b } = await admitBacklogs(t);
    const claim = runState(t.app.db.prisma);

    // A's backlog came first, yet B's runs start as soon as B has fewer running runs than A, and
    // when both run as many, first the one with fewer runs waiting (B's b1 before A's a3, B's b2
    // before A's a1): A's priority orders only A's own runs.
    const order = [];
    for (let i = 0; i < 6; i += 1) order.push(await claim(10));
    expect(order).toEqual(["b1", "a3 urgent", "b2", "a1", "a2", "a4"]);
    expect(await claim(10)).toBeNull();

    // A run whose lease expired is resumed before any queued run, whoever has fewer running.
    const { run: b3 } = await admit(b, { question: "b3" });
    await t.app.db.prisma.run.updateMany({ where: { question: "a2" }, data: { leaseExpiresAt: new Date(Date.now() - 1_000) } });
    expect(await claim(10)).toBe("a2");
    expect(await claim(10)).toBe("b3");
    const resumed = await t.app.db.prisma.run.findFirstOrThrow({ where: { question: "a2" }, select: { attempt: true } });
    expect(resumed.attempt).toBe(2);
    expect((await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: dbId(b3.id) } })).status).toBe("RUNNING");
  });

  it("claims no queued run of a principal at the cap, and still claims the others'", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const { a, b } = await principals(t);
    for (const question of ["a1", "a2", "a3"]) await admit(a, { question });
    const claim = runState(t.app.db.prisma);
    expect([await claim(2), await claim(2), await claim(2)]).toEqual(["a1", "a2", null]);
    await admit(b, { question: "b1" });
    expect(await claim(2)).toBe("b1");
    // One of A's runs settles: A is below the cap again.
    await t.app.db.prisma.run.updateMany({ where: { question: "a1" }, data: { status: "SUCCEEDED", leaseOwner: null } });
    expect(await claim(2)).toBe("a3");
  });
});

describe.each(backends)("a principal's one run behind another's backlog on %s", (backend) => {
  it("takes the next slot even when the backlog's running runs all ended at once", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const { a, b } = await principals(t);
    for (let i = 0; i < 4; i += 1) await admit(a, { question: `a${i}` });
    const claim = runState(t.app.db.prisma);
    expect([await claim(10), await claim(10)]).toEqual(["a0", "a1"]);
    await admit(b, { question: "b0" });
    // A's two runs end together: when the next slot frees, neither principal has a run running.
    await t.app.db.prisma.run.updateMany({ where: { question: { in: ["a0", "a1"] } }, data: { status: "SUCCEEDED", leaseOwner: null } });
    expect(await claim(10)).toBe("b0");
    expect(await claim(10)).toBe("a2");
  });
});

describe.each(backends)("fair claims of many runs at once on %s", (backend) => {
  it("takes them in the order claims one after another would, within each principal's cap, expired leases first", async () => {
    t = await startTestApp(backend, { authRequired: true });
    await admitBacklogs(t);
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    // A cap of 2: two of each principal, interleaved, A's urgent run first of A's.
    expect(await claim(10, 2)).toEqual(["b1", "a3 urgent", "b2", "a1"]);
    expect(await claim(10, 2)).toEqual([]);
    await t.app.db.prisma.run.updateMany({ where: { question: "b1" }, data: { leaseExpiresAt: new Date(Date.now() - 5_000) } });
    await t.app.db.prisma.run.updateMany({ where: { question: { in: ["a1", "a3 urgent"] } }, data: { status: "SUCCEEDED", leaseOwner: null } });
    // B's expired run is taken over first; A, below its cap again, gets its two oldest.
    expect(await claim(10, 2)).toEqual(["b1", "a2", "a4"]);
    expect((await t.app.db.prisma.run.findFirstOrThrow({ where: { question: "b1" } })).attempt).toBe(2);
  });
});

describe.runIf(backends.includes("postgres"))("fair claims made at the same moment on postgres", () => {
  it("four concurrent claims of five runs each never give one principal more running runs than the cap", async () => {
    t = await startTestApp("postgres", { authRequired: true });
    const { a, b } = await principals(t);
    for (let i = 0; i < 12; i += 1) await admit(a, { question: `a${i}` });
    for (let i = 0; i < 2; i += 1) await admit(b, { question: `b${i}` });
    const claim = batchClaims(t.app.db.prisma, { alive: true });
    const claimed = (await Promise.all(Array.from({ length: 4 }, () => claim(5, 3)))).flat();
    expect(claimed.filter((q) => q.startsWith("a"))).toHaveLength(3);
    expect(claimed.filter((q) => q.startsWith("b")).sort()).toEqual(["b0", "b1"]);
    const running = await t.app.db.prisma.run.groupBy({ by: ["ownerId"], where: { status: "RUNNING" }, _count: true });
    expect(running.map((row) => row._count).sort()).toEqual([2, 3]);
  });

  it("a run whose conversation's slot another transaction takes during the claim is left queued, and the claim's other runs start", async () => {
    t = await startTestApp("postgres", { authRequired: true });
    const { a, b } = await principals(t);
    const { run: mine } = await admit(a, { question: "a0" });
    await admit(b, { question: "b0" });
    const { run: other } = await admit(b, { question: "b1 elsewhere" });
    const prisma = t.app.db.prisma;
    const conversationId = (await prisma.run.findUniqueOrThrow({ where: { id: dbId(mine.id) } })).conversationId;
    await prisma.run.updateMany({ where: { id: dbId(other.id) }, data: { status: "SUCCEEDED" } });
    const claim = batchClaims(prisma, { alive: true });
    let claimed: Promise<string[]> | undefined;
    // Another transaction takes a0's conversation's slot after the claim statement chose a0 (the
    // slot was free then) and before the claim's attempts begin: their write waits for its lock.
    await prisma.$transaction(
      async (tx) => {
        await tx.conversation.update({ where: { id: conversationId }, data: { activeRunId: dbId(other.id) } });
        claimed = claim(10, 10);
        await until(async () => {
          const [row] = await prisma.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH runs AS%'`;
          return (row?.n ?? 0) > 0;
        });
      },
      { timeout: 20_000 },
    );
    expect(await claimed).toEqual(["b0"]);
    const a0 = await prisma.run.findUniqueOrThrow({ where: { id: dbId(mine.id) }, include: { attempts: true } });
    expect({ status: a0.status, attempt: a0.attempt, attempts: a0.attempts.length, leaseOwner: a0.leaseOwner }).toEqual({
      status: "QUEUED",
      attempt: 0,
      attempts: 0,
      leaseOwner: null,
    });
    expect(await prisma.trace.count({ where: { runId: dbId(mine.id) } })).toBe(0);
    // Once the slot is free again, a0 is claimed as any queued run.
    await prisma.conversation.update({ where: { id: conversationId }, data: { activeRunId: null } });
    expect(await claim(10, 10)).toEqual(["a0"]);
  });

  it("twelve concurrent claims never give one principal more running runs than the cap", async () => {
    t = await startTestApp("postgres", { authRequired: true });
    const { a, b } = await principals(t);
    for (let i = 0; i < 12; i += 1) await admit(a, { question: `a${i}` });
    for (let i = 0; i < 2; i += 1) await admit(b, { question: `b${i}` });
    const claim = runState(t.app.db.prisma);
    const claimed = (await Promise.all(Array.from({ length: 12 }, () => claim(3)))).filter((q) => q !== null);
    expect(claimed.filter((q) => q.startsWith("a"))).toHaveLength(3);
    expect(claimed.filter((q) => q.startsWith("b")).sort()).toEqual(["b0", "b1"]);
    const running = await t.app.db.prisma.run.groupBy({ by: ["ownerId"], where: { status: "RUNNING" }, _count: true });
    expect(running.map((row) => row._count).sort()).toEqual([2, 3]);
  });
});

async function until(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("timed out waiting for the condition");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
