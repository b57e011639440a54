// The expiry of approval requests nobody decided in time, between principals: however many
// requests one principal's waiting runs let expire together (a reply may hold 64 calls, and a
// waiting run takes no place in the queue), another principal's run whose request expires a
// moment later resumes in the same sweep or the next, and a sweep decides a bounded number of
// requests in a bounded time, each run's due requests in one go, the rest in the sweeps after it.
// The worker sweeps beside its claims (a sweep at work holds no claim back), and a run another
// instance's sweep holds is left, not waited for. The requests are seeded in the database, past
// the app's clock: the sweeps are run as the worker runs them, with a later one.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolApprovalService } from "../../src/domain/runs/tool-approval-service.js";
import { createEventBus } from "../../src/events/topics.js";
import { type LogFields, silentLogger } from "../../src/logger.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { dbId } from "../support/history-seed.js";
import { callTools, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const CALLS_PER_RUN = 64;

const writeReport: Tool = {
  schema: { name: "write_report", description: "writes a report", parameters: { type: "object" } },
  execute: async () => "written",
};

describe.each(backends)("approval expiry between principals on %s", (backend) => {
  let t: TestApp;
  const clock = Date.now();
  /** When the seeded requests expire: after the app's clock, which never reaches it (its worker's sweeps find none due). */
  const due = new Date(clock + 600_000);
  /** What the app logged that tool calls nobody decided in time were rejected: each log line's count. */
  const rejectedLogs: unknown[] = [];
  const logger = {
    ...silentLogger,
    info: (message: string, fields?: LogFields) => void (message.startsWith("rejected tool calls") && rejectedLogs.push(fields?.count)),
  };
  beforeAll(async () => {
    t = await startTestApp(backend, {
      logger,
      now: () => new Date(clock),
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-expiry-fairness-")),
        extraTools: [writeReport],
        leaseMs: 1_500,
        sweepMs: 100,
        approvals: { rules: { "write_*": "always", "*": "never" }, timeoutSeconds: 3_600, now: () => new Date(clock) },
      },
    });
  });
  afterAll(() => t?.close());

  /** `count` runs of a new principal, each WAITING on its one request (which expires with the app's timeout). */
  async function waitingRuns(name: string, count: number): Promise<string[]> {
    const client = t.as(await t.createPrincipal(name));
    const runs = await Promise.all(Array.from({ length: count }, () => admit(client, { question: callTools({ name: "write_report" }) })));
    const ids = runs.map(({ run }) => dbId(run.id));
    const prisma = t.app.db.prisma;
    await waitUntil(async () => (await prisma.run.count({ where: { id: { in: ids }, status: "WAITING" } })) === count || undefined, 60_000);
    return ids;
  }

  /** Adds CALLS_PER_RUN open requests to each run, due at `at` (the run's own stays open, not due: it keeps waiting). */
  async function seedDue(runIds: string[], at: Date): Promise<void> {
    const prisma = t.app.db.prisma;
    for (const runId of runIds) {
      const held = await prisma.toolApproval.findFirstOrThrow({ where: { runId } });
      const data = Array.from({ length: CALLS_PER_RUN }, (_, i) => ({
        ...held,
        id: `${held.id}-${i}`,
        toolCallId: `seeded-${i}`,
        spanId: null,
        expiresAt: at,
      }));
      await prisma.toolApproval.createMany({ data });
    }
  }

  /** The other principal's run, its one request due a moment after the first principal's. */
  async function otherRun(name: string): Promise<string> {
    const [run] = await waitingRuns(name, 1);
    await t.app.db.prisma.toolApproval.updateMany({ where: { runId: run! }, data: { expiresAt: new Date(due.getTime() + 1) } });
    return run!;
  }

  it("resumes another principal's run within two sweeps after one principal's 1,024 requests expire together", async () => {
    const prisma = t.app.db.prisma;
    const many = await waitingRuns("many", 16);
    await seedDue(many, due);
    const other = await otherRun("other");
    const now = new Date(due.getTime() + 1_000);
    const swept: number[] = [];
    while (swept.length < 20 && (await prisma.run.findUniqueOrThrow({ where: { id: other } })).status === "WAITING") {
      swept.push(await t.app.services.toolApprovals.expireDue(now));
    }
    // The first sweep takes one run at least (the first principal's oldest): the other's comes next, in this sweep or the next.
    expect(swept.length).toBeGreaterThan(0);
    expect(swept.length).toBeLessThanOrEqual(2);
    for (let more = 0; more < 40 && swept.at(-1) !== 0; more++) swept.push(await t.app.services.toolApprovals.expireDue(now));
    expect(swept.reduce((sum, count) => sum + count, 0)).toBe(16 * CALLS_PER_RUN + 1);
    expect(await prisma.toolApproval.count({ where: { runId: { in: [...many, other] }, decision: null, expiresAt: { lte: now } } })).toBe(0);
    // The first principal's runs still wait: each one's own request is not due.
    expect(await prisma.run.count({ where: { id: { in: many }, status: "WAITING" } })).toBe(16);
    expect(await t.app.services.toolApprovals.expireDue(now)).toBe(0);
  }, 180_000);

  it("goes on where a sweep out of time stopped: the owners whose turn it did not come to are taken first", async () => {
    const prisma = t.app.db.prisma;
    const many = await waitingRuns("many-timed", 3);
    await seedDue(many, due);
    const other = await otherRun("other-timed");
    const announcer = { announce: async () => undefined };
    // No time at all: each sweep takes one run.
    const service = new ToolApprovalService({ prisma, events: createEventBus(), announcer, expiry: { sweepMs: 0 } });
    const now = new Date(due.getTime() + 1_000);
    const swept = [await service.expireDue(now)];
    expect((await prisma.run.findUniqueOrThrow({ where: { id: other } })).status).toBe("WAITING");
    swept.push(await service.expireDue(now));
    expect((await prisma.run.findUniqueOrThrow({ where: { id: other } })).status).not.toBe("WAITING");
    for (let more = 0; more < 5; more++) swept.push(await service.expireDue(now));
    expect(swept).toEqual([CALLS_PER_RUN, 1, CALLS_PER_RUN, CALLS_PER_RUN, 0, 0, 0]);
  }, 180_000);

  it("decides a bounded number of requests a sweep, each run's due requests together, in rounds that take each owner's runs in turn", async () => {
    const prisma = t.app.db.prisma;
    const many = await waitingRuns("many-bounded", 4);
    await seedDue(many, due);
    const other = await otherRun("other-bounded");
    const announcer = { announce: async () => undefined };
    const service = new ToolApprovalService({
      prisma,
      events: createEventBus(),
      announcer,
      expiry: { runsPerRound: 2, requestsPerSweep: 100, sweepMs: 600_000 },
    });
    const now = new Date(due.getTime() + 1_000);
    const dueOf = (runId: string) => prisma.toolApproval.count({ where: { runId, decision: null, expiresAt: { lte: now } } });
    // The first principal's runs by how many due requests each still has (runs due at once are taken by id), then the other's.
    const open = async () => [...(await Promise.all(many.map(dueOf))).sort((a, b) => a - b), await dueOf(other)];
    // A round: the first principal's oldest run, then the other's; the next round the first's second, and the budget is spent.
    expect(await service.expireDue(now)).toBe(2 * CALLS_PER_RUN + 1);
    expect(await open()).toEqual([0, 0, CALLS_PER_RUN, CALLS_PER_RUN, 0]);
    expect((await prisma.run.findUniqueOrThrow({ where: { id: other } })).status).not.toBe("WAITING");
    expect(await service.expireDue(now)).toBe(2 * CALLS_PER_RUN);
    expect(await open()).toEqual([0, 0, 0, 0, 0]);
    expect(await service.expireDue(now)).toBe(0);
  }, 180_000);

  it("claims a new run while a sweep of waiting runs is still at work, and starts no second sweep meanwhile", async () => {
    const prisma = t.app.db.prisma;
    const service = t.app.services.toolApprovals;
    let sweeps = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The worker's sweeps come in here, and the first one stays until the gate opens.
    service.expireDue = async () => {
      sweeps += 1;
      await gate;
      return 0;
    };
    try {
      await waitUntil(() => sweeps > 0 || undefined, 30_000);
      const { run } = await admit(t.as(await t.createPrincipal("claimed-meanwhile")), { question: JSON.stringify({ turns: [] }) });
      const id = dbId(run.id);
      const status = await waitUntil(async () => {
        const { status } = await prisma.run.findUniqueOrThrow({ where: { id } });
        return status === "QUEUED" ? undefined : status;
      }, 20_000);
      expect(status).not.toBe("QUEUED");
      expect(sweeps).toBe(1);
    } finally {
      release();
      Reflect.deleteProperty(service, "expireDue");
    }
  }, 60_000);

  it("goes on with the next expiry sweep at once while one decided anything, in the same sweep of waiting runs", async () => {
    const service = t.app.services.toolApprovals;
    // Sweeps that each decide a slice of a backlog, then find nothing due.
    const slices = [64, 64, 1];
    rejectedLogs.length = 0;
    service.expireDue = async () => slices.shift() ?? 0;
    try {
      const count = await waitUntil(() => rejectedLogs[0], 30_000);
      expect(count).toBe(129);
      expect(slices).toEqual([]);
    } finally {
      Reflect.deleteProperty(service, "expireDue");
      rejectedLogs.length = 0;
    }
  }, 60_000);

  it.runIf(backend === "postgres")(
    "leaves a run another transaction holds (as another instance's sweep does) to the next sweep, without waiting for it",
    async () => {
      const prisma = t.app.db.prisma;
      const [held] = await waitingRuns("held", 1);
      const free = await waitingRuns("free", 2);
      await seedDue([held!, ...free], due);
      const announcer = { announce: async () => undefined };
      const service = new ToolApprovalService({ prisma, events: createEventBus(), announcer, expiry: { sweepMs: 600_000 } });
      const now = new Date(due.getTime() + 1_000);
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let holder: number | undefined;
      const holding = prisma.$transaction(
        async (tx) => {
          const [row] = await tx.$queryRawUnsafe<{ pid: number }[]>("SELECT pg_backend_pid() AS pid");
          await tx.$queryRawUnsafe("SELECT 1 FROM run WHERE id = $1 FOR NO KEY UPDATE", held);
          holder = row!.pid;
          await gate;
        },
        { timeout: 60_000, maxWait: 10_000 },
      );
      let swept: number | undefined;
      let sweep: Promise<unknown> = Promise.resolve();
      try {
        await waitUntil(() => holder, 10_000);
        sweep = service.expireDue(now).then((count) => (swept = count));
        // Either the sweep ends, or a statement of it waits for the held lock.
        const waitsFor = `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`;
        const first = await waitUntil(async () => {
          if (swept !== undefined) return "ended";
          const [row] = await prisma.$queryRawUnsafe<{ waiting: number }[]>(waitsFor, holder);
          return row!.waiting > 0 ? "waited for the held run" : undefined;
        }, 60_000);
        expect(first).toBe("ended");
        expect(swept).toBe(2 * CALLS_PER_RUN);
      } finally {
        release();
        await holding;
        await sweep;
      }
      expect(await service.expireDue(now)).toBe(CALLS_PER_RUN);
      expect(await service.expireDue(now)).toBe(0);
    },
    180_000,
  );
});
