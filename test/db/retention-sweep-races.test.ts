// The trace retention sweep on PostgreSQL under two kinds of trouble: two instances (two
// connections pools, two TraceRetention services) sweeping one database at once, and a sweep
// process killed mid-purge. Either way each due trace expires exactly once, every due one
// expires, and no pinned trace loses a row.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/open-database.js";
import { TraceRetention } from "../../src/domain/trace/retention/retention-service.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { spawnTs } from "../support/processes.js";
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
});
