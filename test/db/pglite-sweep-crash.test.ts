// The embedded database's retention sweep killed mid-batch: a process holding the data folder
// is SIGKILLed while a batch of traces is marked expired and only part of their rows are deleted.
// Reopened (PostgreSQL's crash recovery inside PGlite), no pinned row is lost, the batch's
// expiry stands, and the next sweep finishes it and the rest.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/open-database.js";
import { TraceRetention } from "../../src/domain/trace/retention/retention-service.js";
import { spawnTs } from "../support/processes.js";
import { type SeededTrace, seedEndedRun, seedOwner, traceRows } from "../support/trace-retention-seed.js";

const DAY = 86_400_000;
const ended = new Date("2026-06-01T12:00:00Z");
const sweepAt = new Date(ended.getTime() + 30 * DAY);
const operator = { days: 7, mode: "DELETE" } as const;

describe("the embedded database's sweep killed mid-batch", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "dossier-sweep-crash-"));
  const due: SeededTrace[] = [];
  const pinned: SeededTrace[] = [];
  beforeAll(async () => {
    const db = await openDatabase({ kind: "pglite", dataDir });
    try {
      await db.migrate();
      const owner = await seedOwner(db.prisma);
      for (let i = 0; i < 40; i++) {
        const trace = await seedEndedRun(db.prisma, owner, { endedAt: ended });
        if (i % 5 === 0) {
          await db.prisma.tracePin.create({ data: { traceId: trace.traceId, reason: "evidence", createdBy: owner.principalId } });
          pinned.push(trace);
        } else due.push(trace);
      }
    } finally {
      await db.close();
    }
  }, 120_000);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("after restart no pinned row is lost, the interrupted batch stays expired, and the next sweep completes", async () => {
    const child = spawnTs("test/support/pglite-sweep-process.ts", { env: { DATA_DIR: dataDir, SWEEP_AT: sweepAt.toISOString() } });
    await child.waitForOutput(/sweeping/, 60_000);
    // A few deletes into the first batch (10 traces, 3 rows per transaction): marked, partly purged.
    await child.waitForOutput(/(delete\s+){5}/, 60_000);
    child.child.kill("SIGKILL");
    expect((await child.exited).signal).toBe("SIGKILL");

    const db = await openDatabase({ kind: "pglite", dataDir });
    try {
      const ids = due.map((t) => t.traceId);
      const afterKill = await db.prisma.trace.findMany({ where: { id: { in: ids } }, select: { expiredAt: true, purgedAt: true } });
      expect(afterKill.filter((row) => row.expiredAt !== null && row.purgedAt === null).length).toBeGreaterThan(0);
      expect(afterKill.filter((row) => row.purgedAt !== null).length).toBeLessThan(due.length);
      for (const trace of pinned) expect(await traceRows(db.prisma, trace.traceId)).toEqual({ spans: 3, events: 4, changes: 7 });

      // Restarted once the dead process's lease ran out (1 s on the fake clock).
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
      expect(report.expired).toBe(afterKill.filter((row) => row.expiredAt === null).length);
      for (const row of await db.prisma.trace.findMany({ where: { id: { in: ids } }, select: { purgedAt: true } })) expect(row.purgedAt).not.toBeNull();
      for (const trace of due) expect(await traceRows(db.prisma, trace.traceId)).toEqual({ spans: 0, events: 0, changes: 0 });
      for (const trace of pinned) expect(await traceRows(db.prisma, trace.traceId)).toEqual({ spans: 3, events: 4, changes: 7 });
      expect((await retention.sweep()).expired).toBe(0);
    } finally {
      await db.close();
    }
  }, 180_000);
});
