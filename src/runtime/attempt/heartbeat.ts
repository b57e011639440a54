// A worker's heartbeat (R17, R18): extends the leases of the attempts it holds, all of them in one
// statement. Finding a run no longer held by its attempt, or a renewal the database refuses for a
// reason of its own, makes that attempt's fence lose the run, which aborts its model request and
// tool calls at once; the other attempts keep theirs. A renewal the database fails transiently (a
// lost connection, no answer within its deadline) decides nothing for anyone: the next beat tries
// again, and each attempt's own clock (own-clock.ts) stops it before its lease may have expired.
import { isTransientDatabaseError, withDeadline } from "../../db/transient-errors.js";
import type { CancelMode, LeaseVerdict, RunState } from "../ports/run-state.js";
import type { AttemptFence } from "../ports/attempt-fence.js";
import { OwnClock } from "./own-clock.js";

/** An attempt whose lease a beat renews. */
export type Beating = {
  fence: AttemptFence;
  /** Told of every successful renewal. */
  clock: OwnClock;
  /** Told of the stop requested of the run (cancelRun), when a renewal finds one. */
  onStop?: (mode: CancelMode) => void;
};

export type BeatOptions = {
  leaseMs: number;
  /** A lease with less than this left is not extended (the attempt has stopped itself by then). */
  marginMs: number;
  /**
   * How long the renewal may take before it counts as failed. Default: as long as the least
   * pressed attempt's clock says it still holds its lease (a slow renewal that succeeds still
   * counts for every attempt whose clock has not run out by then); past that, the next beat may send another.
   */
  deadlineMs?: number;
  /** A busy run's row is waited for, not skipped (the renewal of one attempt whose row was busy). */
  waiting?: boolean;
};

/**
 * One beat: extends the attempts' leases by leaseMs, or tells each fence that lost its run why.
 * Resolves with the attempts nothing was decided for because their run's row was busy.
 */
export async function beat(runs: Pick<RunState, "renewLeases">, attempts: readonly Beating[], options: BeatOptions): Promise<Beating[]> {
  const { leaseMs, marginMs, waiting } = options;
  const beating = attempts.filter((attempt) => !attempt.fence.lost);
  if (beating.length === 0) return [];
  const deadlineMs = options.deadlineMs ?? Math.max(1, ...beating.map((attempt) => attempt.clock.remainingMs()));
  const sentAt = OwnClock.mark();
  let verdicts: (LeaseVerdict | null)[];
  try {
    verdicts = await withDeadline(
      runs.renewLeases(
        beating.map((attempt) => attempt.fence.holder),
        { leaseMs, marginMs },
        waiting,
      ),
      deadlineMs,
      "lease renewal",
    );
  } catch (error) {
    if (isTransientDatabaseError(error)) return [];
    // Refused for a reason of its own: renewed one by one, only the attempt whose renewal the
    // database refuses loses its run.
    if (beating.length > 1) {
      const busy = await Promise.all(beating.map((attempt) => beat(runs, [attempt], options)));
      return busy.flat();
    }
    verdicts = [{ held: false, reason: "LEASE_LOST", detail: `the heartbeat failed: ${error instanceof Error ? error.message : String(error)}` }];
  }
  for (const [i, attempt] of beating.entries()) decide(attempt, verdicts[i] ?? null, sentAt);
  return beating.filter((_, i) => (verdicts[i] ?? null) === null);
}

/** What a renewal sent at `sentAt` says of one attempt; null (its run's row was busy) decides nothing. */
function decide({ fence, clock, onStop }: Beating, verdict: LeaseVerdict | null, sentAt: number): void {
  if (verdict === null) return;
  if (verdict.held) {
    clock.renewed(sentAt);
    if (verdict.stop) onStop?.(verdict.stop);
    return;
  }
  try {
    fence.lose(verdict.reason, verdict.detail);
  } catch {
    // lose() throws to stop whoever writes; here the abort it caused is what counts.
  }
}
