// Lease renewal (R17, R18): a worker extends the leases of every attempt it holds in one
// statement, and learns in the same statement why an attempt no longer holds its run (cancelled,
// taken over, gone) and what stop was asked of each run it still holds.
//
// A run's row is locked while one of its attempt's fenced writes is in flight (holder.ts): the
// worker's renewal of all its attempts skips such rows rather than wait, so one busy run delays no
// other's renewal. A row it skipped, or one that changed between the statement's snapshot and its
// lock, decides nothing there: that attempt is then renewed on its own by a renewal that waits
// for the row (`waiting`), in the row lock's queue behind the write in flight and ahead of the
// attempt's next one — a run whose writes follow each other without a pause would otherwise be
// found busy at every beat and stop itself, its link healthy.
//
// A renewal extends only a lease with more than the margin left, by the database's clock — the
// clock leases are written and claimed by (claim-statement.ts, lease-expired.ts). The attempt
// stops itself by its own clock at the latest at the lease's end minus the margin, so a renewal
// that arrives after that was held on its way (a link that hung and healed): its attempt has
// stopped, and extending its lease would only make another instance wait one more lease before
// taking the run over. It is told it lost its run instead. Between the last moment a renewal
// extends a lease and the first a claim takes the run over there are two margins.
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { Holder } from "./holder.js";
import type { CancelMode, LeaseTerms, LeaseVerdict } from "./vocabulary.js";

type Row = {
  id: string;
  renewed: boolean;
  stop_mode: CancelMode | null;
  status: string | null;
  attempt: number | null;
  held: boolean | null;
  /** Less than the margin was left of the lease when the renewal arrived. */
  late: boolean | null;
};

/**
 * SQL condition: the run's lease has more than the margin left — by the clock when it is
 * evaluated, not the statement's start (now()): a renewal that waited for the row's lock (its
 * holder's link hung) is judged when it gets the row, and its lease counts from then.
 */
const NOT_LATE = "run.lease_expires_at > clock_timestamp() + make_interval(secs => $5::double precision / 1000)";

/** $1 run ids, $2 attempts, $3 workers, $4 the lease in ms, $5 the margin in ms; busy rows skipped, or waited for. */
const renewalSql = (lock: "SKIP LOCKED" | "") => `
  WITH held AS (
    SELECT h.id, h.attempt, h.owner FROM unnest($1::text[], $2::int[], $3::text[]) AS h(id, attempt, owner)
  ), mine AS (
    SELECT run.id FROM run JOIN held ON run.id = held.id AND run.attempt = held.attempt AND run.lease_owner = held.owner
     WHERE run.status = 'RUNNING' AND ${NOT_LATE} ORDER BY run.id FOR NO KEY UPDATE OF run ${lock}
  ), renewed AS (
    UPDATE run SET lease_expires_at = clock_timestamp() + make_interval(secs => $4::double precision / 1000)
      FROM mine WHERE run.id = mine.id AND ${NOT_LATE} RETURNING run.id, run.stop_mode::text AS stop_mode
  )
  SELECT held.id, renewed.id IS NOT NULL AS renewed, renewed.stop_mode, run.status::text AS status, run.attempt,
         run.status = 'RUNNING' AND run.attempt = held.attempt AND run.lease_owner = held.owner AS held,
         NOT ${NOT_LATE} AS late
    FROM held LEFT JOIN renewed ON renewed.id = held.id LEFT JOIN run ON run.id = held.id`;
const SKIPPING_SQL = renewalSql("SKIP LOCKED");
const WAITING_SQL = renewalSql("");

/** The verdict of one attempt's row; null when its row was busy or changed meanwhile. */
function verdictOf(holder: Holder, row: Row | undefined): LeaseVerdict | null {
  if (row?.renewed) return { held: true, stop: row.stop_mode };
  if (row?.held && row.late) return { held: false, reason: "LEASE_LOST", detail: "the lease renewal arrived when less than the margin was left of the lease" };
  if (row?.held) return null;
  if (row?.status === "CANCELLED" && row.attempt === holder.attempt) return { held: false, reason: "CANCELLED", detail: "it was cancelled" };
  const found = row?.status ? `${row.status} under attempt ${row.attempt}` : "gone";
  return { held: false, reason: "LEASE_LOST", detail: `the heartbeat found the run ${found}` };
}

/**
 * Extends the holders' leases by `leaseMs` from the database's clock, those with more than
 * `marginMs` left; for each holder, in order, its verdict, or null when nothing was decided (its
 * row was busy or changed meanwhile). `waiting`: busy rows are waited for instead of skipped.
 */
export async function renewLeases(
  prisma: PrismaClient,
  holders: readonly Holder[],
  { leaseMs, marginMs }: LeaseTerms,
  waiting = false,
): Promise<(LeaseVerdict | null)[]> {
  if (holders.length === 0) return [];
  const rows = await prisma.$queryRawUnsafe<Row[]>(
    waiting ? WAITING_SQL : SKIPPING_SQL,
    holders.map((h) => h.runId),
    holders.map((h) => h.attempt),
    holders.map((h) => h.workerId),
    leaseMs,
    marginMs,
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return holders.map((holder) => verdictOf(holder, byId.get(holder.runId)));
}
