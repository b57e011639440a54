// Handing a run back when the database failed its attempt (a lost connection, a timeout, a
// deadlock victim, a full pool): the run's state is intact, so it is not failed but given back
// to resume — after a backoff that grows while its attempts keep being handed back, so a run the
// database keeps failing does not spin. The hand-back is itself a write: while the database is
// unreachable it is tried again, but only as long as the attempt's own clock says it still holds
// the lease. After that it simply stops; the lease expires and the next claim resumes the run.
import { isTransientDatabaseError, withDeadline } from "../../db/transient-errors.js";
import type { Logger } from "../../logger.js";
import { type AttemptFence, AttemptFencedError } from "../ports/attempt-fence.js";
import type { ClaimedAttempt, RunState } from "../ports/run-state.js";
import type { OwnClock } from "./own-clock.js";

/** The first resume after a failed database waits this long; each hand-back in a row doubles it. */
const FIRST_BACKOFF_MS = 500;
/** Pause between tries of a hand-back the database failed, at most. */
const RETRY_MAX_MS = 1_000;

/** The backoff after `handedBackBefore` hand-backs in a row, at most `maxMs`. */
export const handBackBackoff = (maxMs: number) => (handedBackBefore: number) => Math.min(maxMs, FIRST_BACKOFF_MS * 2 ** Math.min(handedBackBefore, 10));

export type HandBackDeps = { runs: Pick<RunState, "handBack">; logger: Logger; leaseMs: number; workerId: string };

/**
 * Hands the run back with a backoff; resolves with the backoff in ms, or null when the attempt
 * stopped without handing back (it lost the run, or its lease may be gone).
 */
export async function handBackAfterDatabaseFailure(
  deps: HandBackDeps,
  attempt: { claimed: ClaimedAttempt; fence: AttemptFence; clock: OwnClock },
  why: string,
): Promise<number | null> {
  const { claimed } = attempt;
  const where = { runId: claimed.run.id, traceId: claimed.run.id, attempt: claimed.number, worker: deps.workerId, error: why };
  const reason = `handed back: attempt ${claimed.number}'s instance ${deps.workerId} met a database failure (${why.slice(0, 300)})`;
  const backoffMs = await tryHandingBack(deps, attempt, reason);
  if (backoffMs === null) deps.logger.warn("attempt stopped after a database failure; its lease expires and the run resumes", where);
  else deps.logger.warn("run handed back after a database failure", { ...where, backoffMs });
  return backoffMs;
}

async function tryHandingBack(
  deps: HandBackDeps,
  { claimed, fence, clock }: { claimed: ClaimedAttempt; fence: AttemptFence; clock: OwnClock },
  reason: string,
): Promise<number | null> {
  for (let tries = 0; ; tries += 1) {
    const left = clock.remainingMs();
    if (left <= 0 || fence.lost) return null;
    try {
      return await withDeadline(deps.runs.handBack(claimed, fence, reason, handBackBackoff(deps.leaseMs)), left, "hand-back");
    } catch (error) {
      if (error instanceof AttemptFencedError) return null;
      if (!isTransientDatabaseError(error)) throw error;
      deps.logger.warn("handing the run back failed; trying again while the lease lasts", {
        runId: claimed.run.id,
        attempt: claimed.number,
        error: String(error),
      });
      await new Promise((resolve) => setTimeout(resolve, Math.min(RETRY_MAX_MS, 100 * 2 ** tries)));
    }
  }
}
