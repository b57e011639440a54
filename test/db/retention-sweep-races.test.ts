// The trace retention sweep on PostgreSQL under two kinds of trouble: two instances (two
// connections pools, two TraceRetention services) sweeping one database at once, and a sweep
// process killed mid-purge. Either way each due trace expires exactly once, every due one
// expires, and no pinned trace loses a row.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/open-database.js";
import { TraceRetention } from "../../src/domain/trace/retention/retention-service.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { spawnTs } from "../support/processes.js";
import { waitUntil } from "../support/wait.js";
import { type SeededTrace, seedEndedRun, seedOwner, traceRows } from "../support/trace-retention-seed.js";

const DAY = 86_400_000;
const ended = new Date("2026-06-01T12:00:00Z");
const sweepAt = new Date(ended.getTime() + 30 * DAY);
const operator = { days: 7, mode: "DELETE" } as const;

describe.skipIf(!backends.includes("postgres"))("trace retention sweep races (postgres)", () => {
  let db: Database;
  let url: string;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    const opened = await openMigratedTestDatabase("postgres");
    ({ db, dispose } = opened);
    url = opened.url!;
  }, 60_000);
  afterAll(() => dispose());

  /** `due` unpinned traces that ended a month before `sweepAt` and `pinned` explicitly pinned ones, with their rows. */
  async function seed(due: number, pinned: number) {
    const owner = await seedOwner(db.prisma);
    const dueTraces: SeededTrace[] = [];
    const pinnedTraces: SeededTrace[] = [];
    for (let i = 0; i < due + pinned; i++) {
      const trace = await seedEndedRun(db.prisma, owner, { endedAt: ended });
      if (i % Math.ceil((due + pinned) / Math.max(pinned, 1)) === 0 && pinnedTraces.length < pinned) {
        await db.prisma.tracePin.create({ data: { traceId: trace.traceId, reason: "evidence", createdBy: owner.principalId } });
        pinnedTraces.push(trace);
      } else dueTraces.push(trace);
    }
    return { due: dueTraces, pinned: pinnedTraces };
  }

  const expiryOf = async (traces: SeededTrace[]) =>
    db.prisma.trace.findMany({ where: { id: { in: traces.map((t) => t.traceId) } }, select: { expiredAt: true, purgedAt: true } });

  async function expectPinnedIntact(pinned: SeededTrace[]) {
    for (const trace of pinned) expect(await traceRows(db.prisma, trace.traceId)).toEqual({ spans: 3, events: 4, changes: 7 });
    for (const row of await expiryOf(pinned)) expect(row).toEqual({ expiredAt: null, purgedAt: null });
  }

  it("two instances sweeping at once: each due trace expired exactly once, every due one expired, no pinned trace touched", async () => {
    const { due, pinned } = await seed(60, 10);
    const other = await openDatabase({ kind: "postgres", url });
    try {
      const instances = [db, other].map(
        (d, i) =>
          new TraceRetention({ prisma: d.prisma, operator, now: () => sweepAt, instanceId: `instance-${i}`, sweep: { tracesPerBatch: 4, rowsPerBatch: 6 } }),
      );
      // Both sweep again and again at the same time until neither finds anything left.
      const reports = await Promise.all(
        instances.map(async (retention) => {
          const mine = [];
          for (let round = 0; round < 200; round++) {
            const report = await retention.sweep();
            mine.push(report);
            const left = await db.prisma.trace.count({ where: { purgedAt: null, id: { in: due.map((t) => t.traceId) } } });
            if (left === 0) break;
          }
          return mine;
        }),
      );
      const all = reports.flat();
      // Each instance did its part only while it held the lease; their expiries add up to the due traces, none twice.
      expect(all.some((report) => report.ran)).toBe(true);
      expect(all.reduce((sum, report) => sum + report.expired, 0)).toBe(due.length);
      for (const row of await expiryOf(due)) expect(row).toEqual({ expiredAt: sweepAt, purgedAt: sweepAt });
      for (const trace of due) expect(await traceRows(db.prisma, trace.traceId)).toEqual({ spans: 0, events: 0, changes: 0 });
      await expectPinnedIntact(pinned);
      // Nothing is left for a further sweep of either.
      for (const retention of instances) expect((await retention.sweep()).expired).toBe(0);
    } finally {
      await other.close();
    }
  }, 85_000);
  it("a sweep process killed mid-purge (a batch expired, its rows not all removed): after restart no pinned row is lost and the next sweep completes (every due trace purged, purged_at set)", async () => {
    const { due, pinned } = await seed(60, 10);
    const child = spawnTs("test/support/retention-sweep-process.ts", {
      env: { DATABASE_URL: url, SWEEP_AT: sweepAt.toISOString(), TRACES_PER_BATCH: "10", ROWS_PER_BATCH: "4" },
    });
    await child.waitForOutput(/sweeping/, 60_000);
    // Killed while a batch is marked expired and only part purged.
    const expiredUnpurged = () => db.prisma.trace.count({ where: { id: { in: due.map((t) => t.traceId) }, expiredAt: { not: null }, purgedAt: null } });
    await waitUntil(async () => ((await expiredUnpurged()) > 0 ? true : undefined), 60_000, 10);
    child.child.kill("SIGKILL");
    expect((await child.exited).signal).toBe("SIGKILL");

    // It died mid-way: some traces expired, not all of them purged.
    const afterKill = await expiryOf(due);
    expect(afterKill.filter((row) => row.expiredAt).length).toBeGreaterThan(0);
    expect(afterKill.filter((row) => row.purgedAt).length).toBeLessThan(due.length);
    expect(await expiredUnpurged()).toBeGreaterThan(0);
    await expectPinnedIntact(pinned);

    // Restarted once the dead process's lease ran out (1 s on the fake clock): the sweep finishes its work and the rest.
    const restartedAt = new Date(sweepAt.getTime() + 2_000);
    const retention = new TraceRetention({
      prisma: db.prisma,
      operator,
      now: () => restartedAt,
      instanceId: "restarted",
      sweep: { tracesPerBatch: 10, rowsPerBatch: 50 },
    });
    const report = await retention.sweep();
    expect(report.ran).toBe(true);
    expect(report.expired).toBe(afterKill.filter((row) => !row.expiredAt).length);
    for (const row of await expiryOf(due)) {
      expect([sweepAt.getTime(), restartedAt.getTime()]).toContain(row.expiredAt?.getTime());
      expect(row.purgedAt).not.toBeNull();
    }
    for (const trace of due) expect(await traceRows(db.prisma, trace.traceId)).toEqual({ spans: 0, events: 0, changes: 0 });
    await expectPinnedIntact(pinned);
    expect((await retention.sweep()).expired).toBe(0);
  }, 85_000);
});
