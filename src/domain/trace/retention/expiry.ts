// Which traces trace retention expires, and the row-level expiry itself. A trace is due when it
// has ended, its policy's days have passed since the later of its end and its last unpinning,
// nothing pins it, and it has not expired yet. The policy is the run's workspace's, else the run
// owner's default, else the operator's (TRACE_RETENTION_DAYS), else none: kept forever.
//
// Pins are computed from what refers to the run, never stored beside it (an explicit pinTrace is
// the one exception), so a reference can never be forgotten by a pin that was not written:
//   EXPLICIT     a trace_pin row (pinTrace)
//   PUBLICATION  a publication version whose provenance is the run (origin_run_id); the versions a
//                checkpoint section rests on are publication versions, pinned by this same rule
//   CHECKPOINT   a checkpoint revision the run proposed (origin_run_id)
//   APPROVAL     a tool call of the run a person decided (tool_approval.decided_by)
//   SCORE        a person's score (source HUMAN) on the run or on one of its spans
import type { Prisma, RetentionMode } from "../../../generated/prisma/client.js";

export type { RetentionMode } from "../../../generated/prisma/client.js";

type Reader = Pick<Prisma.TransactionClient, "$queryRawUnsafe">;
type Tx = Pick<Prisma.TransactionClient, "$queryRawUnsafe" | "$executeRawUnsafe">;

/** The operator's default policy (TRACE_RETENTION_DAYS): days null keeps traces forever. */
export type OperatorRetention = { days: number | null; mode: RetentionMode };

export const KEEP_FOREVER: OperatorRetention = { days: null, mode: "DELETE" };

export type ExpirableTrace = { traceId: string; mode: RetentionMode };

/**
 * The SQL conditions under which the trace `t` (of the run `t.run_id`) is pinned, one EXISTS per
 * pin kind, each served by an index. Shared by the sweep's query and the pins a reader is shown.
 */
export const PIN_CONDITIONS = {
  EXPLICIT: "EXISTS (SELECT 1 FROM trace_pin tp WHERE tp.trace_id = t.id)",
  PUBLICATION: "EXISTS (SELECT 1 FROM publication_version pv WHERE pv.origin_run_id = t.run_id)",
  CHECKPOINT: "EXISTS (SELECT 1 FROM checkpoint_version cv WHERE cv.origin_run_id = t.run_id)",
  APPROVAL: "EXISTS (SELECT 1 FROM tool_approval ta WHERE ta.run_id = t.run_id AND ta.decided_by IS NOT NULL)",
  SCORE: `(EXISTS (SELECT 1 FROM score s WHERE s.target_kind = 'RUN' AND s.target_id = t.run_id AND s.source = 'HUMAN')
        OR EXISTS (SELECT 1 FROM span sp JOIN score s ON s.target_kind = 'SPAN' AND s.target_id = sp.id AND s.source = 'HUMAN'
                    WHERE sp.trace_id = t.id))`,
} as const;

export type PinKind = keyof typeof PIN_CONDITIONS;

/**
 * The policy that applies to the run `r` (days, mode), as a LATERAL subquery over the parameters
 * $opDays and $opMode (the operator's default): the workspace's, the owner's default, the operator's.
 */
export function policySql(opDays: number, opMode: number): string {
  return `SELECT p.days, p.mode FROM (
            SELECT rp.days, rp.mode, 1 AS rank FROM retention_policy rp WHERE rp.workspace_id = r.workspace_id
            UNION ALL
            SELECT rp.days, rp.mode, 2 FROM retention_policy rp WHERE rp.principal_id = r.owner_id AND rp.workspace_id IS NULL
            UNION ALL
            SELECT $${opDays}::int, $${opMode}::"RetentionMode", 3
          ) p ORDER BY p.rank LIMIT 1`;
}

/**
 * Traces due to expire at `now`, oldest end first, at most `limit`: one query. The partial index
 * on trace(ended_at) WHERE expired_at IS NULL is read only up to the earliest end any policy can
 * make due (now minus the shortest policy's days); each pin is an index probe per candidate.
 * `traceIds` restricts it to those traces (the sweep's re-check under lock).
 */
export async function expirableTraces(
  db: Reader,
  now: Date,
  limit: number,
  options: { operator?: OperatorRetention; traceIds?: readonly string[] } = {},
): Promise<ExpirableTrace[]> {
  const operator = options.operator ?? KEEP_FOREVER;
  const pinned = Object.values(PIN_CONDITIONS)
    .map((condition) => `AND NOT ${condition}`)
    .join("\n        ");
  return db.$queryRawUnsafe<ExpirableTrace[]>(
    `SELECT t.id AS "traceId", pol.mode::text AS mode
       FROM trace t
       JOIN run r ON r.id = t.run_id
       CROSS JOIN LATERAL (${policySql(3, 4)}) pol
      WHERE t.expired_at IS NULL AND t.ended_at IS NOT NULL
        AND t.ended_at <= $1::timestamptz - make_interval(days => (
              SELECT min(d) FROM (SELECT days AS d FROM retention_policy WHERE days IS NOT NULL
                                  UNION ALL SELECT $3::int WHERE $3::int IS NOT NULL) ds))
        AND ($5::text[] IS NULL OR t.id = ANY($5::text[]))
        AND pol.days IS NOT NULL
        AND GREATEST(t.ended_at, t.unpinned_at) + make_interval(days => pol.days) <= $1::timestamptz
        ${pinned}
      ORDER BY t.ended_at, t.id
      LIMIT $2`,
    now,
    limit,
    operator.days,
    operator.mode,
    options.traceIds ? [...options.traceIds] : null,
  );
}

/**
 * Marks the traces expired at `at` (those not expired yet), in the caller's transaction: from
 * then on readers get TraceExpiredError and no pin can be added. Returns the traces it marked.
 */
export async function markExpired(tx: Tx, traces: readonly ExpirableTrace[], at: Date): Promise<string[]> {
  const marked: string[] = [];
  for (const mode of ["DELETE", "KEEP_SUMMARY"] as const) {
    const ids = traces.filter((trace) => trace.mode === mode).map((trace) => trace.traceId);
    if (ids.length === 0) continue;
    const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
      `UPDATE trace SET expired_at = $1, expired_mode = $2::"RetentionMode"
        WHERE id = ANY($3::text[]) AND expired_at IS NULL RETURNING id`,
      at,
      mode,
      ids,
    );
    marked.push(...rows.map((row) => row.id));
  }
  return marked;
}

/**
 * Removes up to `maxRows` rows that the expiry of these (expired) traces removes, each by its
 * own expired_mode: replay log and events always; spans (DELETE) or span attributes
 * (KEEP_SUMMARY). Returns how many rows it removed or cleared; 0 means nothing is left, and the
 * traces are then marked purged. `maxRows` bounds each statement, so a batch stays short.
 */
export async function purgeExpiredRows(tx: Tx, traceIds: readonly string[], at: Date, maxRows: number): Promise<number> {
  const ids = [...traceIds];
  if (ids.length === 0) return 0;
  let removed = 0;
  const step = async (sql: string) => {
    if (removed >= maxRows) return;
    removed += await tx.$executeRawUnsafe(sql, ids, maxRows - removed);
  };
  await step(
    `DELETE FROM trace_change WHERE (trace_id, seq) IN (
       SELECT c.trace_id, c.seq FROM trace_change c JOIN trace t ON t.id = c.trace_id
        WHERE c.trace_id = ANY($1::text[]) AND t.expired_at IS NOT NULL LIMIT $2)`,
  );
  await step(
    `DELETE FROM span_event WHERE id = ANY(ARRAY(
       SELECT e.id FROM span_event e JOIN span sp ON sp.id = e.span_id JOIN trace t ON t.id = sp.trace_id
        WHERE sp.trace_id = ANY($1::text[]) AND t.expired_at IS NOT NULL LIMIT $2))`,
  );
  await step(
    `DELETE FROM span WHERE id = ANY(ARRAY(
       SELECT sp.id FROM span sp JOIN trace t ON t.id = sp.trace_id
        WHERE sp.trace_id = ANY($1::text[]) AND t.expired_mode = 'DELETE' LIMIT $2))`,
  );
  await step(
    `UPDATE span SET attributes = '{}'::jsonb WHERE id = ANY(ARRAY(
       SELECT sp.id FROM span sp JOIN trace t ON t.id = sp.trace_id
        WHERE sp.trace_id = ANY($1::text[]) AND t.expired_mode = 'KEEP_SUMMARY' AND sp.attributes <> '{}'::jsonb LIMIT $2))`,
  );
  if (removed === 0) {
    await tx.$executeRawUnsafe(`UPDATE trace SET purged_at = $2 WHERE id = ANY($1::text[]) AND expired_at IS NOT NULL AND purged_at IS NULL`, ids, at);
  }
  return removed;
}

/**
 * The row-level expiry of these traces in the caller's transaction: marks them expired (DELETE:
 * spans, events and replay log go; KEEP_SUMMARY: events and replay log go, spans keep kind, name,
 * times, status and usage, their attributes are cleared) and removes their rows. Runs, answers,
 * publications, the conversation log and the ledger are never touched. The sweep uses
 * markExpired and purgeExpiredRows to keep each transaction bounded; this is both at once.
 */
export async function expireTraces(tx: Tx, traces: readonly ExpirableTrace[], at: Date): Promise<string[]> {
  const marked = await markExpired(tx, traces, at);
  const ids = traces.map((trace) => trace.traceId);
  while ((await purgeExpiredRows(tx, ids, at, 10_000)) > 0) {
    // each round removes at most 10,000 rows; the last one (nothing left) marks them purged
  }
  return marked;
}
