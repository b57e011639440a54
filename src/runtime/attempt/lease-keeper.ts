// What keeps an attempt's lease (R17, R18): its heartbeat and its own clock. The heartbeat renews
// the lease once a third of it has passed since the last renewal was sent (a slow claim renews
// sooner), one renewal at a time, so renewals do not pile up on a link that hangs. The clock makes
// the attempt lose its fence — which aborts its model request and tool calls — once it could not
// renew for the lease minus the margin, before another instance may take the run over.
import type { AttemptFence } from "../ports/attempt-fence.js";
import type { CancelMode, RunState } from "../ports/run-state.js";
import { beat } from "./heartbeat.js";
import { OwnClock } from "./own-clock.js";

export type LeaseKeeper = { clock: OwnClock; stop(): void };

export function keepLease({
  runs,
  fence,
  leaseMs,
  marginMs,
  sentAt,
  onStop,
}: {
  runs: Pick<RunState, "renewLease">;
  fence: AttemptFence;
  leaseMs: number;
  marginMs: number;
  /** When the claim that began the lease was sent (OwnClock.mark()). */
  sentAt: number;
  /** Told of a stop requested of the run that a renewal found (a stop announced elsewhere, not heard here). */
  onStop?: (mode: CancelMode) => void;
}): LeaseKeeper {
  const onExpired = (silentMs: number) => {
    try {
      fence.lose("LEASE_LOST", `no lease renewal for ${Math.round(silentMs)} ms: the attempt stopped itself before another may take the run over`);
    } catch {
      // lose() throws to stop whoever writes; here the abort it caused is what counts.
    }
  };
  const clock = new OwnClock({ leaseMs, marginMs, onExpired }, sentAt);
  let beating = false;
  const heartbeat = setInterval(
    () => {
      if (beating || clock.sinceRenewalMs() < leaseMs / 3) return;
      beating = true;
      void beat(runs, fence, { leaseMs, clock, onStop }).finally(() => {
        beating = false;
      });
    },
    Math.max(25, leaseMs / 12),
  );
  return {
    clock,
    stop() {
      clearInterval(heartbeat);
      clock.stop();
    },
  };
}
