// One principal's backlog does not slow everyone's claims: a claim looks at the next few queued
// runs of each principal with queued runs, not at every queued run. Principal A has 5,000 queued
// runs (inserted with SQL, each in a conversation of its own), B admits one: the claim statement
// that takes B's run reads a few hundred rows of the run table, counted in its executed plan. The
// same with 5,000 runs of A to resume (every held tool call decided): they are read as A's queued
// runs are, a few at a time, and B's run, ranked beside them, goes first. And with 5,000 runs A's
// access token admitted queued while the tokens hold their share of A's places (its API key's two
// runs wait for the other two): the runs A's API key admits are read beside them, not behind them,
// and taken.
import { afterEach, describe, expect, it } from "vitest";
import { takeClaimable } from "../../src/domain/runs/claim-statement.js";
import { PrismaRunState } from "../../src/domain/runs/run-state.js";
import { createEventBus } from "../../src/events/topics.js";
import type { Prisma, PrismaClient } from "../../src/generated/prisma/client.js";
import { backends } from "../support/databases.js";
import { CreateAccessTokenDocument } from "../../sdk/generated/graphql.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { executedPlan, rowsScanned } from "../support/plan-rows.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const BACKLOG = 5_000;
/** The run rows a claim may read with any backlog: a few per principal with queued runs. */
const ROWS_BOUND = 1_000;

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** `count` copies of the run, each queued in a conversation of its own, inserted in two statements. */
async function queueCopies(prisma: PrismaClient, runId: string, count: number): Promise<void> {
  await prisma.$executeRawUnsafe(
    `INSERT INTO conversation (id, owner_id, title)
     SELECT 'backlog-c' || g, r.owner_id, 'backlog' FROM run r, generate_series(1, $2::int) g WHERE r.id = $1`,
    runId,
    count,
  );
  const columns = (
    await prisma.$queryRawUnsafe<{ name: string }[]>(
      "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'run' ORDER BY ordinal_position",
    )
  ).map((c) => c.name);
  const copied = columns.map((c) => (c === "id" ? "'backlog-r' || g" : c === "conversation_id" ? "'backlog-c' || g" : `r.${c}`));
  await prisma.$executeRawUnsafe(
    `INSERT INTO run (${columns.join(", ")}) SELECT ${copied.join(", ")} FROM run r, generate_series(1, $2::int) g WHERE r.id = $1`,
    runId,
    count,
  );
}

const claimant = {
  workerId: "worker-1",
  leaseMs: 60_000,
  leaseMarginMs: 1_000,
  maxRunningPerPrincipal: 4,
  liveness: async () => true,
  describeRun: () => ({ name: "run", attributes: {} }),
};

/** The rows of the run table the claim statement reads, executed under EXPLAIN ANALYZE in a transaction rolled back after. */
async function claimRowsScanned(prisma: PrismaClient, limit: number): Promise<number> {
  let scanned = -1;
  await prisma
    .$transaction(async (tx) => {
      const explaining = {
        $queryRawUnsafe: async (sql: string, ...values: unknown[]) => {
          scanned = rowsScanned(await executedPlan((s, ...v) => tx.$queryRawUnsafe(s, ...v), sql, ...values), "run");
          return [];
        },
      } as unknown as Prisma.TransactionClient;
      await takeClaimable(explaining, claimant, { runId: undefined, limit, full: [] });
      throw new Error("rolled back");
    })
    .catch((error: Error) => {
      if (error.message !== "rolled back") throw error;
    });
  return scanned;
}

describe.each(backends)("a claim beside a principal's backlog on %s", (backend) => {
  it(`reads fewer than ${ROWS_BOUND} run rows with ${BACKLOG} runs of another principal queued, and takes B's run`, async () => {
    t = await startTestApp(backend);
    const prisma = t.app.db.prisma;
    const [a, b] = [t.as(await t.createPrincipal("A")), t.as(await t.createPrincipal("B"))];
    const { run: first } = await admit(a, { question: "a backlog" });
    await queueCopies(prisma, dbId(first.id), BACKLOG);
    const { run } = await admit(b, { question: "B's one run" });
    expect(await prisma.run.count({ where: { status: "QUEUED" } })).toBe(BACKLOG + 2);

    expect(await claimRowsScanned(prisma, 1)).toBeLessThan(ROWS_BOUND);
    expect(await claimRowsScanned(prisma, 20)).toBeLessThan(ROWS_BOUND);

    const runs = new PrismaRunState({ prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
    const claimed = await runs.claimMany(claimant, 1);
    expect(claimed.map((c) => c.run.id)).toEqual([dbId(run.id)]);
  }, 240_000);
});

describe.each(backends)("a claim beside a principal's runs resuming after decisions on %s", (backend) => {
  it(`reads fewer than ${ROWS_BOUND} run rows with ${BACKLOG} runs of another principal to resume, and takes B's run first`, async () => {
    t = await startTestApp(backend);
    const prisma = t.app.db.prisma;
    const [a, b] = [t.as(await t.createPrincipal("A")), t.as(await t.createPrincipal("B"))];
    const { run: first } = await admit(a, { question: "a backlog" });
    await queueCopies(prisma, dbId(first.id), BACKLOG);
    // Every one of A's runs had its held calls decided: RUNNING again, with no worker and an expired lease.
    const ownerId = (await prisma.run.findUniqueOrThrow({ where: { id: dbId(first.id) } })).ownerId;
    await prisma.run.updateMany({ where: { ownerId }, data: { status: "RUNNING", attempt: 1, leaseOwner: null, leaseExpiresAt: new Date(0) } });
    const { run } = await admit(b, { question: "B's one run" });

    expect(await claimRowsScanned(prisma, 1)).toBeLessThan(ROWS_BOUND);
    expect(await claimRowsScanned(prisma, 20)).toBeLessThan(ROWS_BOUND);

    const runs = new PrismaRunState({ prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
    const claimed = await runs.claimMany(claimant, 1);
    expect(claimed.map((c) => c.run.id)).toEqual([dbId(run.id)]);
  }, 240_000);
});

describe.each(backends)("a claim beside a principal's access tokens' backlog on %s", (backend) => {
  it(`reads fewer than ${ROWS_BOUND} run rows with ${BACKLOG} runs of the tokens queued at their share, and takes the key's runs`, async () => {
    // Room in A's queue for its key's run behind the backlog.
    t = await startTestApp(backend, { authRequired: true, maxQueuedRunsPerPrincipal: 4 * BACKLOG });
    const prisma = t.app.db.prisma;
    const a = t.as(await t.createPrincipal("A"));
    const workspace = await createWorkspace(a, "end user's");
    const minted = (await a.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: workspace.id, operations: ["ADMIT", "READ"] }] } }))
      .createAccessToken;
    const user = t.as(expectType(minted, "CreateAccessTokenSuccess").token);
    const { run: first } = await admit(user, { workspaceId: workspace.id, question: "a token's backlog" });
    await queueCopies(prisma, dbId(first.id), BACKLOG);
    // Two of them run (a cap of 4: the tokens' share).
    const copies = await prisma.run.findMany({ where: { id: { startsWith: "backlog-r" } }, select: { id: true }, orderBy: { id: "asc" }, take: 2 });
    await prisma.run.updateMany({
      where: { id: { in: copies.map((copy) => copy.id) } },
      data: { status: "RUNNING", attempt: 1, leaseOwner: "worker-0", leaseExpiresAt: new Date(Date.now() + 600_000) },
    });
    // No key run waiting: the tokens may take A's other places, and their backlog is read a few runs at a time.
    expect(await claimRowsScanned(prisma, 20)).toBeLessThan(ROWS_BOUND);
    const keyRuns = [(await admit(a, { question: "the key's first run" })).run, (await admit(a, { question: "the key's second run" })).run];

    expect(await claimRowsScanned(prisma, 1)).toBeLessThan(ROWS_BOUND);
    expect(await claimRowsScanned(prisma, 20)).toBeLessThan(ROWS_BOUND);

    const runs = new PrismaRunState({ prisma, events: createEventBus(), trace: { announce: () => undefined, exportEnded: () => undefined } });
    const claimed = await runs.claimMany(claimant, 20);
    expect(claimed.map((c) => c.run.id)).toEqual(keyRuns.map((run) => dbId(run.id)));
  }, 240_000);
});
