// An attempt's heartbeat (R17, R18): extends its lease while it runs. A failure, or finding the
// run no longer held by the attempt, makes its fence lose the run, which aborts the attempt's
// model request and tool calls at once.
import type { LeaseVerdict, RunState } from "../ports/run-state.js";
import type { AttemptFence } from "../ports/attempt-fence.js";

/** One beat: extends the lease by leaseMs, or tells the fence why the attempt lost its run. */
export async function beat(runs: Pick<RunState, "renewLease">, fence: AttemptFence, leaseMs: number): Promise<void> {
  if (fence.lost) return;
  let verdict: LeaseVerdict;
  try {
    verdict = await runs.renewLease(fence.holder, leaseMs);
  } catch (error) {
    verdict = { held: false, reason: "LEASE_LOST", detail: `the heartbeat failed: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (verdict.held) return;
  try {
    fence.lose(verdict.reason, verdict.detail);
  } catch {
    // lose() throws to stop whoever writes; here the abort it caused is what counts.
  }
}
