// Expiry by the week on PostgreSQL: a week partition of the trace tables whose traces are due is
// dropped whole, after the rows that must stay are moved into the retained partition.
//
// A week W is considered once its end is older than the shortest retention period in force (before
// that, no trace written in it can be due). Its expiry, one instance at a time (a session advisory
// lock, released by PostgreSQL if the process dies):
//   1. one transaction: every trace with rows in W is classified. Traces that must stay (pinned,
//      not yet due, kept forever, still running) get their rows in W moved to the retained
//      partition (an UPDATE of `period`: row movement, atomic for readers). Due traces kept as
//      summaries get their spans' skeleton moved there; due traces lose their rows outside W row
//      by row (a trace that straddled two weeks, or was kept earlier), and are marked expired;
//   2. each table's W partition is detached and dropped (one short transaction each, see
//      partition-drop.ts).
// A crash anywhere leaves a state this sequence resumes from: before (1) commits, nothing
// happened; after it, W holds only rows of expired traces, which a rerun recognises (expired
// traces are never moved back) and drops.
// Live ingestion and subscriptions are untouched by (1) (they write and read the current week;
// the classification holds no lock on them) and wait at most the drop's lock timeout during (2).
import { detachAndDrop } from "../../../db/trace-partitions/partition-drop.js";
import { PARTITIONED_TABLES, partitionName, periodEnd } from "../../../db/trace-partitions/partition-layout.js";
import { ensureWeeksAhead, inTransaction, weekPartitions } from "../../../db/trace-partitions/partition-tables.js";
import type { SqlSession } from "../../../db/sql-session.js";

export type ExpiryMode = "DELETE" | "KEEP_SUMMARY";

/** The retention rules a week's expiry asks; retention-rules-of-weeks.ts gives Dossier's. */
export type WeekExpiryRules = {
  /** Weeks that end at or before this time may be dropped; null when nothing is ever due. */
  dropWeeksEndingBefore(session: SqlSession, now: Date): Promise<Date | null>;
  /** Of these traces, those due now and those expired already, each with its mode. */
  classify(session: SqlSession, traceIds: string[], now: Date): Promise<{ due: Map<string, ExpiryMode>; expired: Map<string, ExpiryMode> }>;
  /** Marks the due traces expired at `at`, in the transaction that moves the week's rows. */
  markExpired(session: SqlSession, due: Map<string, ExpiryMode>, at: Date): Promise<void>;
};

export type WeekExpiryReport = { busy: boolean; weeks: { start: Date; moved: number; expired: number }[]; created: string[] };

/** Not the migration runner's nor the partition maintenance's key: a sweep may run while they do. */
export const WEEK_EXPIRY_LOCK_KEY = 72707371;

export async function expireWeeks(session: SqlSession, rules: WeekExpiryRules, now: Date = new Date()): Promise<WeekExpiryReport> {
  const [lock] = await session.query<{ held: boolean }>("SELECT pg_try_advisory_lock($1) AS held", [WEEK_EXPIRY_LOCK_KEY]);
  if (!lock?.held) return { busy: true, weeks: [], created: [] };
  try {
    const created = await ensureWeeksAhead(session, now);
    const before = await rules.dropWeeksEndingBefore(session, now);
    const weeks: WeekExpiryReport["weeks"] = [];
    if (before === null) return { busy: false, weeks, created };
    for (const start of await weeksEndingBefore(session, before.getTime() < now.getTime() ? before : now)) {
      weeks.push({ start, ...(await expireWeek(session, rules, start, now)) });
    }
    return { busy: false, weeks, created };
  } finally {
    await session.query("SELECT pg_advisory_unlock($1)", [WEEK_EXPIRY_LOCK_KEY]);
  }
}

/** Weeks of any of the tables (a crash may have dropped some tables' partition and not the others'). */
async function weeksEndingBefore(session: SqlSession, before: Date): Promise<Date[]> {
  const starts = new Map<number, Date>();
  for (const { table } of PARTITIONED_TABLES) {
    for (const { start } of await weekPartitions(session, table)) if (periodEnd(start) <= before) starts.set(start.getTime(), start);
  }
  return [...starts.values()].sort((a, b) => a.getTime() - b.getTime());
}

async function expireWeek(session: SqlSession, rules: WeekExpiryRules, start: Date, now: Date): Promise<{ moved: number; expired: number }> {
  const [span, event, change] = [
    await attachedPartition(session, partitionName("span", start)),
    await attachedPartition(session, partitionName("span_event", start)),
    await attachedPartition(session, partitionName("trace_change", start)),
  ];
  const result = await inTransaction(session, async () => {
    const sources = [
      span && `SELECT trace_id FROM "${span}"`,
      change && `SELECT trace_id FROM "${change}"`,
      event && `SELECT s.trace_id FROM "${event}" e JOIN span s ON s.id = e.span_id`,
    ].filter(Boolean);
    if (sources.length === 0) return { moved: 0, expired: 0 };
    const ids = (await session.query<{ trace_id: string }>(sources.join(" UNION "))).map((row) => row.trace_id);
    const { due, expired } = await rules.classify(session, ids, now);
    const stay = ids.filter((id) => !due.has(id) && !expired.has(id));
    const summaries = [...due].filter(([, mode]) => mode === "KEEP_SUMMARY").map(([id]) => id);
    const deleted = [...due].filter(([, mode]) => mode === "DELETE").map(([id]) => id);
    // A summary expired earlier (row by row) may still have its skeleton in this week.
    const earlierSummaries = [...expired].filter(([, mode]) => mode === "KEEP_SUMMARY").map(([id]) => id);
    const week = [start.toISOString(), periodEnd(start).toISOString()];
    const moved = await moveToRetained(session, stay, week);
    await keepSkeletons(session, [...summaries, ...earlierSummaries], week);
    await deleteOutsideWeek(session, { summaries, deleted }, week);
    await rules.markExpired(session, due, now);
    return { moved, expired: due.size };
  });
  for (const { table } of PARTITIONED_TABLES) await detachAndDrop(session, table, partitionName(table, start));
  return result;
}

async function attachedPartition(session: SqlSession, name: string): Promise<string | null> {
  const [row] = await session.query<{ attached: boolean }>(`SELECT EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1)) AS attached`, [
    `public.${name}`,
  ]);
  return row?.attached ? name : null;
}

const IN_WEEK = "period >= $2::timestamptz AND period < $3::timestamptz";
const OUTSIDE_WEEK = "NOT (period >= $2::timestamptz AND period < $3::timestamptz)";
const SPANS_OF = "SELECT id FROM span WHERE trace_id = ANY($1::text[])";

async function countOf(session: SqlSession, sql: string, params: unknown[]): Promise<number> {
  const [row] = await session.query<{ n: number }>(`WITH changed AS (${sql} RETURNING 1) SELECT count(*)::int AS n FROM changed`, params);
  return row?.n ?? 0;
}

/** Every row the week holds of these traces goes to the retained partition; returns how many. */
async function moveToRetained(session: SqlSession, traceIds: string[], week: string[]): Promise<number> {
  if (traceIds.length === 0) return 0;
  const params = [traceIds, ...week];
  return (
    (await countOf(session, `UPDATE span_event SET period = 'infinity' WHERE ${IN_WEEK} AND span_id IN (${SPANS_OF})`, params)) +
    (await countOf(session, `UPDATE trace_change SET period = 'infinity' WHERE ${IN_WEEK} AND trace_id = ANY($1::text[])`, params)) +
    (await countOf(session, `UPDATE span SET period = 'infinity' WHERE ${IN_WEEK} AND trace_id = ANY($1::text[])`, params))
  );
}

/** A summary keeps its spans' kind, name, times, status and usage: their attributes go. */
async function keepSkeletons(session: SqlSession, traceIds: string[], week: string[]): Promise<void> {
  if (traceIds.length === 0) return;
  await session.query(`UPDATE span SET period = 'infinity', attributes = '{}' WHERE ${IN_WEEK} AND trace_id = ANY($1::text[])`, [traceIds, ...week]);
}

/** What the drop will not take of the due traces: their rows in other weeks or in the retained partition. */
async function deleteOutsideWeek(session: SqlSession, { summaries, deleted }: { summaries: string[]; deleted: string[] }, week: string[]): Promise<void> {
  const due = [...summaries, ...deleted];
  if (due.length === 0) return;
  await session.query(`DELETE FROM span_event WHERE ${OUTSIDE_WEEK} AND span_id IN (${SPANS_OF})`, [due, ...week]);
  await session.query(`DELETE FROM trace_change WHERE ${OUTSIDE_WEEK} AND trace_id = ANY($1::text[])`, [due, ...week]);
  if (deleted.length > 0) await session.query(`DELETE FROM span WHERE ${OUTSIDE_WEEK} AND trace_id = ANY($1::text[])`, [deleted, ...week]);
  if (summaries.length > 0) {
    await session.query(`UPDATE span SET attributes = '{}' WHERE ${OUTSIDE_WEEK} AND trace_id = ANY($1::text[]) AND attributes <> '{}'`, [summaries, ...week]);
  }
}
