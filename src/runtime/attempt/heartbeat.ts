// An attempt's heartbeat (R17, R18): extends its lease while it runs. Finding the run no longer
// held by the attempt, or a renewal the database refuses for a reason of its own, makes its
// fence lose the run, which aborts the attempt's model request and tool calls at once. A renewal
// the database fails transiently (a lost connection, no answer within its deadline) decides
// nothing: the next beat tries again, and the attempt's own clock (own-clock.ts) stops it before
// the lease may have expired.
import { isTransientDatabaseError, withDeadline } from "../../db/transient-errors.js";
import type { CancelMode, LeaseVerdict, RunState } from "../ports/run-state.js";
import type { AttemptFence } from "../ports/attempt-fence.js";
import { OwnClock } from "./own-clock.js";

export type BeatOptions = {
  leaseMs: number;
  /** Told of every successful renewal; without it a renewal only extends the lease in the database. */
  clock?: OwnClock;
  /**
   * How long a renewal may take before it counts as failed. Default: as long as the clock says
   * the attempt still holds the lease (a slow renewal that succeeds still counts), else a third of the lease.
   */
  deadlineMs?: number;
  /** Told of the stop requested of the run (cancelRun), when a renewal finds one. */
  onStop?: (mode: CancelMode) => void;
};

/** One beat: extends the lease by leaseMs, or tells the fence why the attempt lost its run. */
export async function beat(runs: Pick<RunState, "renewLease">, fence: AttemptFence, { leaseMs, clock, deadlineMs, onStop }: BeatOptions): Promise<void> {
  if (fence.lost) return;
  deadlineMs ??= clock ? Math.max(1, clock.remainingMs()) : leaseMs / 3;
  const sentAt = OwnClock.mark();
  let verdict: LeaseVerdict;
  try {
    verdict = await withDeadline(runs.renewLease(fence.holder, leaseMs), deadlineMs, "lease renewal");
  } catch (error) {
    if (isTransientDatabaseError(error)) return;
    verdict = { held: false, reason: "LEASE_LOST", detail: `the heartbeat failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (verdict.held) {
    clock?.renewed(sentAt);
    if (verdict.stop) onStop?.(verdict.stop);
    return;
  }
  try {
    fence.lose(verdict.reason, verdict.detail);
  } catch {
    // lose() throws to stop whoever writes; here the abort it caused is what counts.
  }
}
