// The trace retention sweep while current runs keep ingesting, on each database: 8 writers append
// spans and events to their traces as fast as the database takes them, the sweep starts on a timer
// (as the worker's companion starts it) and must finish, every due trace expired and purged, no
// pinned row touched, while the writers keep writing. On the embedded database, whose one
// connection lives in this process, a writer that never waited on anything else used to keep the
// event loop to itself: the sweep's timer never fired.
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/open-database.js";
import { TraceRetention } from "../../src/domain/trace/retention/retention-service.js";
import { appendEventsIn, ensureTrace, startSpanIn } from "../../src/domain/trace/trace-writes.js";
import type { Prisma } from "../../src/generated/prisma/client.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { type SeededTrace, seedEndedRun, seedOwner, traceRows } from "../support/trace-retention-seed.js";

const DAY = 86_400_000;
const WRITERS = 8;
const operator = { days: 7, mode: "DELETE" } as const;

describe.each(backends)("trace retention sweep under ingestion (%s)", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    ({ db, dispose } = await openMigratedTestDatabase(backend));
  }, 60_000);
  afterAll(() => dispose());

  /** Writers appending to the traces of current runs until stopped; `records` counts what they wrote. */
  async function startWriters(owner: { principalId: string; conversationId: string }) {
    const state = { records: 0, stopped: false };
    const tx = db.prisma as unknown as Prisma.TransactionClient;
    const traceIds: string[] = [];
    for (let n = 0; n < WRITERS; n++) {
      const runId = `live-${backend}-${n}`;
      await db.prisma.run.create({
        data: {
          id: runId,
          ownerId: owner.principalId,
          conversationId: owner.conversationId,
          agent: "researcher",
          question: "Still running?",
          status: "RUNNING",
          maxTurns: 50,
          tokenBudget: 1_000_000,
          deadlineSeconds: 3600,
          deadlineAt: new Date(Date.now() + 3_600_000),
          configuration: {},
          startedAt: new Date(),
        },
      });
      traceIds.push(await db.prisma.$transaction((t) => ensureTrace(t, runId)));
    }
    const running = Promise.all(
      traceIds.map(async (traceId) => {
        let spanId = "";
        for (let write = 0; !state.stopped; write++) {
          if (write % 10 === 0) {
            ({ spanId } = await db.prisma.$transaction((t) => startSpanIn(t, { traceId, kind: "TOOL_CALL", name: `tool ${write}`, at: new Date() })));
            state.records += 1;
          }
          const events = Array.from({ length: 4 }, () => ({ spanId, kind: "TOOL_OUTPUT" as const, payload: "a tool result", at: new Date() }));
          await appendEventsIn(tx, traceId, events);
          state.records += 4;
        }
      }),
    );
    return {
      state,
      traceIds,
      async stop() {
        state.stopped = true;
        await running;
      },
    };
  }

  it("a sweep started on a timer finishes while 8 writers ingest, and the writers keep writing during it", async () => {
    const owner = await seedOwner(db.prisma);
    const ended = new Date(Date.now() - 30 * DAY);
    const due: SeededTrace[] = [];
    const pinned: SeededTrace[] = [];
    for (let i = 0; i < 40; i++) {
      const trace = await seedEndedRun(db.prisma, owner, { endedAt: ended, children: 4, eventsPerSpan: 3 });
      if (i % 10 === 0) {
        await db.prisma.tracePin.create({ data: { traceId: trace.traceId, reason: "evidence", createdBy: owner.principalId } });
        pinned.push(trace);
      } else due.push(trace);
    }
    const retention = new TraceRetention({ prisma: db.prisma, operator, instanceId: "under-load", sweep: { tracesPerBatch: 5, rowsPerBatch: 20 } });
    const writers = await startWriters(owner);
    let during = 0;
    let sweeps = 0;
    try {
      // The sweep starts on a timer, as the worker's companion starts it.
      await sleep(300);
      const before = writers.state.records;
      expect(before).toBeGreaterThan(0);
      let batches = 0;
      const finished = (async () => {
        for (; sweeps < 50; sweeps++) {
          const report = await retention.sweep({ afterBatch: async () => void batches++ });
          if (report.ran && report.expired === 0 && report.rows === 0) return true;
        }
        return false;
      })();
      expect(await finished).toBe(true);
      during = writers.state.records - before;
      expect(batches).toBeGreaterThanOrEqual(due.length / 5);
    } finally {
      await writers.stop();
    }
    // The writers wrote throughout the sweep's many batches, not only before or after it.
    expect(during).toBeGreaterThan(WRITERS * 4);
    const dueRows = await db.prisma.trace.findMany({ where: { id: { in: due.map((t) => t.traceId) } }, select: { expiredAt: true, purgedAt: true } });
    for (const row of dueRows) expect(row.purgedAt).not.toBeNull();
    for (const trace of due) expect(await traceRows(db.prisma, trace.traceId)).toEqual({ spans: 0, events: 0, changes: 0 });
    for (const trace of pinned) expect(await traceRows(db.prisma, trace.traceId)).toEqual({ spans: 5, events: 12, changes: 17 });
    // The current runs' traces are whole: every record the writers counted is stored.
    const live = await Promise.all(writers.traceIds.map((traceId) => traceRows(db.prisma, traceId)));
    expect(live.reduce((sum, rows) => sum + rows.spans + rows.events, 0)).toBe(writers.state.records);
  }, 120_000);
});
