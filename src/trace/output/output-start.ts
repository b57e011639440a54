// What a runOutput subscription reads to start, in one statement: whether the run is the
// subscriber's, whether its trace expired or it settled without one, the model calls running now,
// and the trace's changes after the subscriber's position (a subscriber at the live end gets
// none). One snapshot, so the changes are the whole replay log after that position unless the
// trace expired, and the running calls are the ones after the last change read. When a hundred
// runs start at once, each statement here is a round trip the runs' own claims wait behind.
import type { PrismaClient } from "../../generated/prisma/client.js";
import { streamStartRows } from "../../db/direct-statements.js";
import { TERMINAL_STATUSES } from "../../domain/runs/stop-reasons.js";
import { pagesAfter, REPLAY_PAGE, type TraceStart, type TraceUpdate } from "../updates/trace-updates.js";

export type OutputStart = {
  trace: TraceStart;
  /** The run's model calls running now. */
  running: string[];
  /** A model call of the run ended after the position's trace change (asked only for a position inside a call). */
  modelCallEndedAfter: boolean;
};

type ChangeRow = { seq: number; type: string; spanId: string | null; eventId: string | null; at: string; spanKind: string | null };
type StartRow = {
  status: string;
  trace_id: string | null;
  last_seq: number | null;
  expired_at: Date | null;
  expired_mode: "DELETE" | "KEEP_SUMMARY" | null;
  running: string[];
  ended_after: boolean;
  changes: ChangeRow[];
};

/**
 * The start statement, one text per kind of position and of owner check: each is prepared once per
 * connection (direct-statements.ts). Planning it weighs forty times more than running it (2.4 ms
 * of PostgreSQL's CPU against 0.1 ms, measured): a hundred subscriptions starting at once would
 * spend a quarter of a second of the database's CPU planning. Only a position inside a call asks
 * whether a model call ended after it; and only a span's end needs its kind, looked up on its own
 * (a subquery, not a join). The trace tables are partitioned on PostgreSQL (every span lookup by id
 * probes each week's index), and planning a join of two of them weighs more than running it: a
 * lookup left out is one not planned or run. $1: the position's seq; $2: the page; $3: the run; $4: its owner.
 */
const startSql = (endedAfter: boolean, owner: boolean) => `
    SELECT r.status::text AS status, t.id AS trace_id, t.last_seq, t.expired_at, t.expired_mode::text AS expired_mode,
      (SELECT coalesce(json_agg(s.id), '[]'::json) FROM span s WHERE s.trace_id = r.id AND s.kind = 'MODEL_CALL' AND s.status = 'RUNNING') AS running,
      ${
        endedAfter
          ? `EXISTS (
          SELECT 1 FROM trace_change c JOIN span s ON s.id = c.span_id
          WHERE c.trace_id = r.id AND c.seq > $1::bigint AND c.type = 'SPAN_ENDED' AND s.kind = 'MODEL_CALL')`
          : "false"
      } AS ended_after,
      (SELECT coalesce(json_agg(json_build_object('seq', c.seq, 'type', c.type, 'spanId', c.span_id, 'eventId', c.event_id, 'at', c.at,
                'spanKind', CASE WHEN c.type = 'SPAN_ENDED' THEN (SELECT s.kind FROM span s WHERE s.id = c.span_id) END) ORDER BY c.seq), '[]'::json)
         FROM (SELECT c.seq, c.type, c.span_id, c.event_id, c.at FROM trace_change c
                WHERE c.trace_id = r.id AND c.seq > $1::bigint AND t.expired_at IS NULL ORDER BY c.seq LIMIT $2::int) c) AS changes
    FROM run r LEFT JOIN trace t ON t.id = r.id
    WHERE r.id = $3${owner ? " AND r.owner_id = $4" : ""}`;
const START_SQL = [false, true].map((endedAfter) => [false, true].map((owner) => startSql(endedAfter, owner)));

/** A trace's changes after $2 (and before $3 when not null), $4 at most, a span's end with its span's kind; prepared once per connection. */
const CHANGES_WITH_KINDS_SQL = `
      SELECT c.seq, c.type::text AS type, c.span_id AS "spanId", c.event_id AS "eventId", c.at, s.kind::text AS "spanKind"
        FROM trace_change c LEFT JOIN span s ON c.type = 'SPAN_ENDED' AND s.id = c.span_id
       WHERE c.trace_id = $1 AND c.seq > $2::bigint AND ($3::bigint IS NULL OR c.seq < $3::bigint)
       ORDER BY c.seq LIMIT $4::int`;

/**
 * The start of run `runId`'s output stream after position `after`; null when there is no such run
 * (or, with `ownerId`, none of that principal's: another's run reads as absent).
 */
export async function readOutputStart(
  prisma: PrismaClient,
  runId: string,
  after: { seq: number; chars: number },
  ownerId?: string,
): Promise<OutputStart | null> {
  const [row] = await streamStartRows<StartRow>(
    prisma,
    START_SQL[after.chars > 0 ? 1 : 0]![ownerId === undefined ? 0 : 1]!,
    after.seq,
    REPLAY_PAGE,
    runId,
    ...(ownerId === undefined ? [] : [ownerId]),
  );
  if (!row) return null;
  const expired =
    row.trace_id !== null && row.expired_at !== null
      ? ({
          traceId: runId,
          seq: row.last_seq ?? 0,
          type: "TRACE_EXPIRED",
          spanId: null,
          eventId: null,
          span: null,
          at: new Date(row.expired_at),
          mode: row.expired_mode ?? "DELETE",
        } as const)
      : null;
  return {
    trace: {
      expired,
      settledWithoutTrace: row.trace_id === null && (TERMINAL_STATUSES as readonly string[]).includes(row.status),
      changes: row.changes.map((change) => changeOf(runId, change)),
    },
    running: row.running,
    modelCallEndedAfter: row.ended_after,
  };
}

/**
 * A trace's changes after `afterSeq` (and before `beforeSeq`), a page a statement, a span's end
 * with its span's kind rather than its state: all runOutput needs to tell a model call's end.
 */
export async function* changesWithKinds(prisma: PrismaClient, traceId: string, afterSeq: number, beforeSeq?: number): AsyncGenerator<TraceUpdate> {
  // seq is an INTEGER column: a number on every path.
  const pages = pagesAfter(afterSeq, (cursor, limit) => streamStartRows<ChangeRow>(prisma, CHANGES_WITH_KINDS_SQL, traceId, cursor, beforeSeq ?? null, limit));
  for await (const page of pages) for (const change of page) yield changeOf(traceId, change);
}

function changeOf(traceId: string, { seq, type, spanId, eventId, at, spanKind }: ChangeRow): TraceUpdate {
  return { traceId, seq, type: type as "SPAN_STARTED", spanId, eventId, span: null, at: new Date(at), spanKind };
}
