// Trace retention's core: which traces are due at a given (fake) time, and what expiring one
// removes and keeps — on both databases.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../../src/db/open-database.js";
import { expirableTraces, expireTraces } from "../../../src/domain/trace/retention/expiry.js";
import { backends, openMigratedTestDatabase } from "../../support/databases.js";
import { seedEndedRun, seedOwner, traceRows } from "../../support/trace-retention-seed.js";

const DAY = 86_400_000;
const ended = new Date("2026-06-01T12:00:00Z");
const at = (days: number) => new Date(ended.getTime() + days * DAY);

describe.each(backends)("trace expiry (%s)", (backend) => {
  let db: Database;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    ({ db, dispose } = await openMigratedTestDatabase(backend));
  });
  afterAll(() => dispose());

  it("an unpinned trace is due once its policy's days have passed since its end, not before; an explicit pin keeps it", async () => {
    const owner = await seedOwner(db.prisma);
    const due = await seedEndedRun(db.prisma, owner, { endedAt: ended });
    const pinned = await seedEndedRun(db.prisma, owner, { endedAt: ended });
    await db.prisma.tracePin.create({ data: { traceId: pinned.traceId, reason: "evidence", createdBy: owner.principalId } });
    const operator = { days: 7, mode: "DELETE" as const };
    const mine = (list: { traceId: string }[]) => list.map((trace) => trace.traceId).filter((id) => id === due.traceId || id === pinned.traceId);

    expect(mine(await expirableTraces(db.prisma, at(6.9), 100, { operator }))).toEqual([]);
    expect(mine(await expirableTraces(db.prisma, at(7), 100, { operator }))).toEqual([due.traceId]);
    // No operator default and no policy: kept forever.
    expect(mine(await expirableTraces(db.prisma, at(10_000), 100))).toEqual([]);
  });

  it("DELETE removes spans, events and replay log; KEEP_SUMMARY keeps exactly the spans' skeleton; the run and its log are untouched", async () => {
    const owner = await seedOwner(db.prisma);
    const deleted = await seedEndedRun(db.prisma, owner, { endedAt: ended });
    const summarised = await seedEndedRun(db.prisma, owner, { endedAt: ended });
    const before = await db.prisma.span.findMany({ where: { traceId: summarised.traceId }, orderBy: { id: "asc" } });
    const runBefore = await db.prisma.run.findUniqueOrThrow({ where: { id: deleted.runId } });

    const expiredAt = at(30);
    await db.prisma.$transaction((tx) =>
      expireTraces(
        tx,
        [
          { traceId: deleted.traceId, mode: "DELETE" },
          { traceId: summarised.traceId, mode: "KEEP_SUMMARY" },
        ],
        expiredAt,
      ),
    );

    expect(await traceRows(db.prisma, deleted.traceId)).toEqual({ spans: 0, events: 0, changes: 0 });
    expect(await traceRows(db.prisma, summarised.traceId)).toEqual({ spans: 3, events: 0, changes: 0 });
    const after = await db.prisma.span.findMany({ where: { traceId: summarised.traceId }, orderBy: { id: "asc" } });
    expect(after).toEqual(before.map((span) => ({ ...span, attributes: {} })));
    const traces = await db.prisma.trace.findMany({ where: { id: { in: [deleted.traceId, summarised.traceId] } }, orderBy: { id: "asc" } });
    expect(traces.map((trace) => [trace.id, trace.expiredAt, trace.expiredMode, trace.purgedAt])).toEqual(
      [
        [deleted.traceId, expiredAt, "DELETE", expiredAt],
        [summarised.traceId, expiredAt, "KEEP_SUMMARY", expiredAt],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    expect(await db.prisma.run.findUniqueOrThrow({ where: { id: deleted.runId } })).toEqual(runBefore);
    expect(await db.prisma.message.findUnique({ where: { id: deleted.messageId } })).not.toBeNull();
  });
});
