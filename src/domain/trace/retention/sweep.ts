// The trace retention sweep: expires the traces that are due, in bounded batches, on one instance
// at a time (the sweep lease). Each batch is two kinds of short transaction, so live ingestion and
// subscriptions of current runs never wait on it for long:
//   1. mark: lock the candidates still unexpired (skipping any row another transaction holds, such
//      as a pin being added), check again under the lock that each is due and unpinned, and set
//      expired_at/expired_mode. This commit is the expiry: from then on no pin can be added and
//      readers get TraceExpiredError.
//   2. purge: remove the expired traces' rows at most `rowsPerBatch` per transaction, until none
//      is left (then purged_at is set).
// A crash between or during these leaves traces expired and not purged; the next sweep finishes
// them first. A pinned trace is never marked, so none of its rows is ever removed.
import type { PrismaClient } from "../../../generated/prisma/client.js";
import { expirableTraces, markExpired, type OperatorRetention, purgeExpiredRows } from "./expiry.js";
import { releaseSweepLease, takeSweepLease } from "./sweep-lease.js";

/** The lease the sweep runs under (sweep_lease.name). */
export const RETENTION_LEASE = "trace-retention";

export type SweepSettings = {
  /** Traces marked per transaction. */
  tracesPerBatch: number;
  /** Rows removed (or cleared) per transaction. */
  rowsPerBatch: number;
  /** How long the lease holds without renewal: a sweep that died frees it after this. */
  leaseMs: number;
};

export const DEFAULT_SWEEP: SweepSettings = { tracesPerBatch: 500, rowsPerBatch: 10_000, leaseMs: 60_000 };

export type SweepReport = {
  /** Traces this sweep expired. */
  expired: number;
  /** Rows it removed or cleared (its own expiries' and those an interrupted sweep left). */
  rows: number;
  /** False when another instance held the lease: this one did nothing. */
  ran: boolean;
};

export async function sweepExpiredTraces(
  prisma: PrismaClient,
  options: {
    now: Date;
    /**
     * Only traces expired by then have their rows removed row by row (default `now`): on PostgreSQL
     * a trace still expires on time (readers get TraceExpiredError), and its rows go with its week's
     * partition; what is left of it a week later is removed row by row.
     */
    dueBy?: Date;
    /** Runs first, under the lease: PostgreSQL's expiry of whole weeks (week-expiry.ts). */
    beforeRows?: () => Promise<unknown>;
    operator: OperatorRetention;
    holder: string;
    settings?: Partial<SweepSettings>;
    afterBatch?: () => Promise<void>;
  },
): Promise<SweepReport> {
  const { now, operator, holder, afterBatch } = options;
  const dueBy = options.dueBy ?? now;
  const settings = { ...DEFAULT_SWEEP, ...options.settings };
  const lease = (db: Pick<PrismaClient, "$queryRawUnsafe" | "$executeRawUnsafe">) => takeSweepLease(db, RETENTION_LEASE, holder, now, settings.leaseMs);
  if (!(await lease(prisma))) return { expired: 0, rows: 0, ran: false };
  const report: SweepReport = { expired: 0, rows: 0, ran: true };
  try {
    await options.beforeRows?.();
    report.rows += await finishInterrupted(prisma, dueBy, now, settings, lease);
    for (;;) {
      const candidates = await expirableTraces(prisma, now, settings.tracesPerBatch, { operator });
      if (candidates.length === 0) break;
      const marked = await prisma.$transaction(async (tx) => {
        if (!(await lease(tx))) return null;
        const locked = await tx.$queryRawUnsafe<{ id: string }[]>(
          `SELECT id FROM trace WHERE id = ANY($1::text[]) AND expired_at IS NULL ORDER BY id FOR UPDATE SKIP LOCKED`,
          candidates.map((candidate) => candidate.traceId),
        );
        if (locked.length === 0) return { ids: [] as string[], summaries: [] as string[] };
        const due = await expirableTraces(tx, now, locked.length, { operator, traceIds: locked.map((row) => row.id) });
        const ids = await markExpired(tx, due, now);
        const summaries = new Set(due.filter((trace) => trace.mode === "KEEP_SUMMARY").map((trace) => trace.traceId));
        return { ids, summaries: ids.filter((id) => summaries.has(id)) };
      });
      if (marked === null || marked.ids.length === 0) break; // the lease moved on, or every candidate is busy: next sweep
      report.expired += marked.ids.length;
      // A summary must read as one at once (no attributes, no events); a deleted trace reads as
      // expired at once, and where weeks are dropped its rows wait for their week.
      const purgeNow = dueBy.getTime() >= now.getTime() ? marked.ids : marked.summaries;
      report.rows += await purge(prisma, purgeNow, now, settings, lease);
      await afterBatch?.();
    }
  } finally {
    await releaseSweepLease(prisma, RETENTION_LEASE, holder).catch(() => undefined);
  }
  return report;
}

type Lease = (db: Pick<PrismaClient, "$queryRawUnsafe" | "$executeRawUnsafe">) => Promise<boolean>;

/** Removes the rows of these expired traces, `rowsPerBatch` per transaction, renewing the lease each time. */
async function purge(prisma: PrismaClient, traceIds: string[], now: Date, settings: SweepSettings, lease: Lease): Promise<number> {
  if (traceIds.length === 0) return 0;
  let total = 0;
  for (;;) {
    const removed = await prisma.$transaction(async (tx) => {
      if (!(await lease(tx))) return null;
      return purgeExpiredRows(tx, traceIds, now, settings.rowsPerBatch);
    });
    if (removed === null) throw new Error("the trace retention lease was lost during a sweep");
    total += removed;
    if (removed === 0) return total;
  }
}

/** Finishes the expiries (by `dueBy`) whose rows are not all removed yet: an interrupted sweep's, or left to the week's drop. */
async function finishInterrupted(prisma: PrismaClient, dueBy: Date, now: Date, settings: SweepSettings, lease: Lease): Promise<number> {
  let total = 0;
  for (;;) {
    const pending = await prisma.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id FROM trace WHERE (expired_at <= $2 OR expired_mode = 'KEEP_SUMMARY') AND purged_at IS NULL ORDER BY expired_at, id LIMIT $1`,
      settings.tracesPerBatch,
      dueBy,
    );
    if (pending.length === 0) return total;
    total += await purge(
      prisma,
      pending.map((row) => row.id),
      now,
      settings,
      lease,
    );
  }
}
