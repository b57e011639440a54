// What a reader is told of a trace's retention: why it stays (its pins, computed from what refers
// to the run, exactly as the sweep decides) and when it expires if nothing changes.
import type { Prisma } from "../../../generated/prisma/client.js";
import { type OperatorRetention, PIN_CONDITIONS, type PinKind, policySql, type RetentionMode } from "./expiry.js";

type Reader = Pick<Prisma.TransactionClient, "$queryRawUnsafe">;

export type TracePinView = { kind: PinKind; reason: string; createdAt: Date };

/** The most pins a trace lists (the oldest first); one is enough to keep it. */
export const PINS_LISTED_MAX = 100;

/**
 * Why the trace stays, oldest reference first: its explicit pin, and each publication version,
 * checkpoint revision, person's decision and person's score that refers to the run or a span of it.
 * The checkpoint sections' sources are publication versions: a version published from the run is
 * listed (PUBLICATION) whether or not a checkpoint rests on it.
 */
export async function pinsOf(db: Reader, traceId: string): Promise<TracePinView[]> {
  return db.$queryRawUnsafe<TracePinView[]>(
    `WITH t AS (SELECT id, run_id FROM trace WHERE id = $1)
     SELECT kind, reason, created_at AS "createdAt" FROM (
        SELECT 'EXPLICIT' AS kind, tp.reason, tp.created_at FROM t JOIN trace_pin tp ON tp.trace_id = t.id
        UNION ALL
        SELECT 'PUBLICATION', 'version ' || pv.version || ' of "' || p.title || '" was published from this run', pv.created_at
          FROM t JOIN publication_version pv ON pv.origin_run_id = t.run_id JOIN publication p ON p.id = pv.publication_id
        UNION ALL
        SELECT 'CHECKPOINT', 'checkpoint revision ' || cv.revision || ' rests on this run''s proposal', cv.created_at
          FROM t JOIN checkpoint_version cv ON cv.origin_run_id = t.run_id
        UNION ALL
        SELECT 'APPROVAL', 'a person decided ' || ta.decision || ' on a call of ' || ta.tool_name, ta.decided_at
          FROM t JOIN tool_approval ta ON ta.run_id = t.run_id AND ta.decided_by IS NOT NULL
        UNION ALL
        SELECT 'SCORE', 'a person scored the run (' || c.name || ')', s.created_at
          FROM t JOIN score s ON s.target_kind = 'RUN' AND s.target_id = t.run_id AND s.source = 'HUMAN'
          JOIN score_config c ON c.id = s.config_id
        UNION ALL
        SELECT 'SCORE', 'a person scored the span "' || sp.name || '" (' || c.name || ')', s.created_at
          FROM t JOIN span sp ON sp.trace_id = t.id
          JOIN score s ON s.target_kind = 'SPAN' AND s.target_id = sp.id AND s.source = 'HUMAN'
          JOIN score_config c ON c.id = s.config_id
      ) pins
      ORDER BY created_at, kind
      LIMIT ${PINS_LISTED_MAX}`,
    traceId,
  );
}

export type TraceRetentionView = {
  /** When it expires if nothing changes; null when pinned, kept forever, running, or expired. */
  expiresAt: Date | null;
  /** The policy that applies now: days null keeps it forever. */
  policy: { days: number | null; mode: RetentionMode };
  pinned: boolean;
};

/** The trace's policy, whether it is pinned, and when it expires. Null for a trace that does not exist. */
export async function retentionOf(db: Reader, traceId: string, operator: OperatorRetention): Promise<TraceRetentionView | null> {
  const pinned = `(${Object.values(PIN_CONDITIONS).join(" OR ")})`;
  const [row] = await db.$queryRawUnsafe<
    { endedAt: Date | null; unpinnedAt: Date | null; expiredAt: Date | null; days: number | null; mode: RetentionMode; pinned: boolean }[]
  >(
    `SELECT t.ended_at AS "endedAt", t.unpinned_at AS "unpinnedAt", t.expired_at AS "expiredAt",
            pol.days, pol.mode::text AS mode, ${pinned} AS pinned
       FROM trace t JOIN run r ON r.id = t.run_id CROSS JOIN LATERAL (${policySql(2, 3)}) pol
      WHERE t.id = $1`,
    traceId,
    operator.days,
    operator.mode,
  );
  if (!row) return null;
  const { endedAt, unpinnedAt, expiredAt, days, mode } = row;
  const from = endedAt && unpinnedAt && unpinnedAt > endedAt ? unpinnedAt : endedAt;
  const expiresAt = from && days !== null && !row.pinned && !expiredAt ? new Date(from.getTime() + days * 86_400_000) : null;
  return { expiresAt, policy: { days, mode }, pinned: row.pinned };
}
