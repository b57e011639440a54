// Settling an attempt's outcome (R1, R18), and what happens when settling itself fails. The
// settle steps (publishing the answer, deciding proposals, releasing spills) run in the attempt's
// fenced settle transaction; when one of them fails, none of that settling's effects stay and the
// run ends FAILED with INTERNAL_ERROR instead (its proposals dropped, its spills released; with no
// settle step at all if even that fails), rather than staying RUNNING to be claimed, resumed and
// fail to settle again forever. An attempt that lost its fence meanwhile settles nothing: the
// AttemptFencedError goes to the caller.
import type { RunStatusName } from "../../events/topics.js";
import type { Logger } from "../../logger.js";
import type { Outcome } from "../loop/outcome.js";
import { type AttemptFence, AttemptFencedError } from "../ports/attempt-fence.js";
import type { ClaimedAttempt, RunState, SettleStep } from "../ports/run-state.js";
import { isTransientDatabaseError } from "../../db/transient-errors.js";

/** Settles as the outcome says; returns the terminal status and the outcome that was settled. */
export async function settleOutcome(
  deps: { runs: Pick<RunState, "settle">; steps: readonly SettleStep[]; logger: Logger },
  claimed: ClaimedAttempt,
  fence: AttemptFence,
  outcome: Outcome,
): Promise<{ status: RunStatusName; settled: Outcome }> {
  const { runs, steps } = deps;
  try {
    return { status: await runs.settle(claimed, fence, outcome, steps), settled: outcome };
  } catch (error) {
    // A database that failed settles nothing: the attempt hands the run back (or its lease expires).
    if (error instanceof AttemptFencedError || isTransientDatabaseError(error)) throw error;
    deps.logger.error("settling failed", { runId: claimed.run.id, attempt: claimed.number, error: describe(error) });
    const failed: Outcome = { type: "failed", reason: "INTERNAL_ERROR", message: `settling the run failed: ${describe(error)}` };
    const status = await runs.settle(claimed, fence, failed, steps).catch((again: unknown) => {
      if (again instanceof AttemptFencedError) throw again;
      return runs.settle(claimed, fence, failed, []);
    });
    return { status, settled: failed };
  }
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
