// Runs that resume after their held tool calls were decided (or were handed back) have no lease
// owner: they wait their principal's turn under MAX_RUNNING_RUNS_PER_PRINCIPAL, ranked with queued
// runs, and go first only among their principal's own runs. A run whose worker died keeps its
// slot: no queued run of its principal takes it meanwhile, and it is taken over before any run.
import { afterEach, describe, expect, it } from "vitest";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
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

/** A principal's runs holding a running slot (RUNNING under a lease a worker owns). */
async function holding(prisma: PrismaClient, ownerId: string): Promise<string[]> {
  const rows = await prisma.run.findMany({ where: { ownerId, status: "RUNNING", leaseOwner: { not: null } }, orderBy: { question: "asc" } });
  return rows.map((row) => row.question);
}

describe.each(backends)("runs resuming after decisions on %s", (backend) => {
  it("are claimed within their principal's cap and fairly beside another principal's queued run, before their own queued runs", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const prisma = t.app.db.prisma;
    const [a, b] = [t.as(await t.createPrincipal("A")), t.as(await t.createPrincipal("B"))];
    const questions = ["a0", "a1", "a2", "a3", "a4"];
    for (const question of questions) await admit(a, { question });
    const claim = batchClaims(prisma, { alive: false });
    expect(await claim(5, 10)).toEqual(questions);
    // Every held call of the five was decided: each run is RUNNING again with no worker and its
    // lease expired (the row `resume` leaves).
    const ownerId = (await prisma.run.findFirstOrThrow({ where: { question: "a0" } })).ownerId;
    await prisma.run.updateMany({ where: { ownerId }, data: { leaseOwner: null, leaseExpiresAt: new Date(0) } });
    await admit(a, { question: "a5 urgent", priority: 1000 });
    const { run: b0 } = await admit(b, { question: "b0" });

    // A cap of 1: one of A's (its oldest run to resume, before its urgent queued run) and B's run.
    expect(await claim(4, 1)).toEqual(["b0", "a0"]);
    expect(await holding(prisma, ownerId)).toEqual(["a0"]);
    expect((await prisma.run.findUniqueOrThrow({ where: { id: dbId(b0.id) } })).leaseOwner).not.toBeNull();
    expect(await claim(4, 1)).toEqual([]);
    // A's run ends: the next of A's runs to resume takes the slot, still before the urgent one.
    await prisma.run.updateMany({ where: { question: "a0" }, data: { status: "SUCCEEDED", leaseOwner: null } });
    expect(await claim(4, 1)).toEqual(["a1"]);
    expect(await prisma.run.count({ where: { ownerId, status: "QUEUED" } })).toBe(1);
  });
});

describe.each(backends)("a run whose worker died on %s", (backend) => {
  it("keeps its principal's slot until it is taken over, ahead of every queued run", async () => {
    t = await startTestApp(backend, { authRequired: true });
    const prisma = t.app.db.prisma;
    const [a, b, c] = [t.as(await t.createPrincipal("A")), t.as(await t.createPrincipal("B")), t.as(await t.createPrincipal("C"))];
    await admit(a, { question: "a0" });
    const claim = batchClaims(prisma, { alive: false });
    expect(await claim(1, 1)).toEqual(["a0"]);
    const ownerId = (await prisma.run.findFirstOrThrow({ where: { question: "a0" } })).ownerId;
    await admit(a, { question: "a1" });
    await admit(b, { question: "b0" });
    // a0's worker stopped renewing: its lease expired, within the safety margin (its attempt may
    // still be running). A's slot is still a0's: only B's run starts.
    await prisma.run.updateMany({ where: { question: "a0" }, data: { leaseExpiresAt: new Date(Date.now() - 100) } });
    expect(await claim(4, 1)).toEqual(["b0"]);
    await admit(c, { question: "c0" });
    // Past the margin, a0 is taken over first, though A is at its cap, and A's queued run waits.
    await prisma.run.updateMany({ where: { question: "a0" }, data: { leaseExpiresAt: new Date(Date.now() - 5_000) } });
    expect(await claim(1, 1)).toEqual(["a0"]);
    expect(await claim(4, 1)).toEqual(["c0"]);
    expect(await holding(prisma, ownerId)).toEqual(["a0"]);
    expect((await prisma.run.findFirstOrThrow({ where: { question: "a0" } })).attempt).toBe(2);
    expect((await prisma.run.findFirstOrThrow({ where: { question: "a1" } })).status).toBe("QUEUED");
  });
});
