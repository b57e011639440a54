// When a running run's lease counts as expired for a claim (R17): an owned lease only once the
// safety margin has passed too, so the attempt that held it — which stops itself at the lease
// minus the margin (runtime/attempt/own-clock.ts) — has stopped before another begins. A lease
// without an owner (handed back) has no attempt to wait for: it is claimable once its time is up.

/** SQL condition on `alias`'s lease; `$marginParam` is the margin in milliseconds. */
export function leaseExpiredSql(alias: string, marginParam: number): string {
  return `${alias}.lease_expires_at < now() - CASE WHEN ${alias}.lease_owner IS NULL THEN interval '0'
            ELSE make_interval(secs => $${marginParam}::double precision / 1000) END`;
}

/**
 * SQL condition: the run holds one of its principal's running slots (claim.ts and its first
 * attempt's statement count these) — RUNNING with an owned lease, expired or not: a run whose
 * worker died keeps its slot until a claim takes it over (before any other run, and not counted
 * again then), so a queued run of the same principal does not take the slot meanwhile. A run
 * handed back or resumed after decisions has no owner: it holds no slot until claimed again.
 */
export const HOLDING_SLOT = "status = 'RUNNING' AND lease_owner IS NOT NULL";
