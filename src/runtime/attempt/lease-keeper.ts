// What keeps a worker's leases (R17, R18): one heartbeat for every attempt the worker holds, and
// each attempt's own clock. The heartbeat renews an attempt's lease once a third of it has passed
// since its last renewal was sent (a slow claim renews sooner), and with it every other attempt
// whose last renewal is at least half as old — one statement for all of them, so attempts that
// began at different moments converge to one renewal per third of a lease, whatever their
// number. One renewal at a time, so renewals do not pile up on a link that hangs. The clock makes
// an attempt lose its fence — which aborts its model request and tool calls — once it could not
// renew for the lease minus the margin, before another instance may take the run over.
import type { AttemptFence } from "../ports/attempt-fence.js";
import type { CancelMode, RunState } from "../ports/run-state.js";
import { type Beating, beat } from "./heartbeat.js";
import { OwnClock } from "./own-clock.js";

/** One attempt's lease, kept while it runs: `stop` when the attempt ends. */
export type KeptLease = { clock: OwnClock; stop(): void };

export class LeaseKeeper {
  /** The attempts held, by run. */
  private readonly attempts = new Map<string, Beating>();
  private timer: NodeJS.Timeout | undefined;
  private beating = false;
  /** Attempts whose renewal waits for their run's row, outside the beats (renewAlone). */
  private readonly alone = new Set<Beating>();

  constructor(
    private readonly options: {
      runs: Pick<RunState, "renewLeases">;
      leaseMs: number;
      marginMs: number;
    },
  ) {}

  /** Keeps the attempt's lease from `sentAt` (when the claim that began it was sent: OwnClock.mark()). */
  keep({ fence, sentAt, onStop }: { fence: AttemptFence; sentAt: number; onStop?: (mode: CancelMode) => void }): KeptLease {
    const { leaseMs, marginMs } = this.options;
    const onExpired = (silentMs: number) => {
      try {
        fence.lose("LEASE_LOST", `no lease renewal for ${Math.round(silentMs)} ms: the attempt stopped itself before another may take the run over`);
      } catch {
        // lose() throws to stop whoever writes; here the abort it caused is what counts.
      }
    };
    const attempt: Beating = { fence, clock: new OwnClock({ leaseMs, marginMs, onExpired }, sentAt), onStop };
    this.attempts.set(fence.holder.runId, attempt);
    this.timer ??= setInterval(() => this.tick(), Math.max(25, leaseMs / 12));
    return {
      clock: attempt.clock,
      stop: () => {
        attempt.clock.stop();
        if (this.attempts.get(fence.holder.runId) === attempt) this.attempts.delete(fence.holder.runId);
        if (this.attempts.size > 0) return;
        clearInterval(this.timer);
        this.timer = undefined;
      },
    };
  }

  /** The clock of the attempt holding `runId`, while it runs. */
  clock(runId: string): OwnClock | undefined {
    return this.attempts.get(runId)?.clock;
  }

  /** Renews when some attempt is due, with every attempt at least half due. */
  private tick(): void {
    const { runs, leaseMs, marginMs } = this.options;
    if (this.beating) return;
    const held = [...this.attempts.values()].filter((attempt) => !attempt.fence.lost && !this.alone.has(attempt));
    if (!held.some((attempt) => attempt.clock.sinceRenewalMs() >= leaseMs / 3)) return;
    this.beating = true;
    const due = held.filter((attempt) => attempt.clock.sinceRenewalMs() >= leaseMs / 6);
    void beat(runs, due, { leaseMs, marginMs })
      .then((busy) => {
        for (const attempt of busy) this.renewAlone(attempt);
      })
      .finally(() => {
        this.beating = false;
      });
  }

  /**
   * Renews an attempt whose run's row the beat found busy on its own, waiting for the row (a run
   * whose fenced writes follow each other closely is found busy at every beat); the beats leave it
   * out until that renewal is answered, so a row held for long holds up no other attempt.
   */
  private renewAlone(attempt: Beating): void {
    if (this.attempts.get(attempt.fence.holder.runId) !== attempt) return;
    this.alone.add(attempt);
    const { leaseMs, marginMs } = this.options;
    void beat(this.options.runs, [attempt], { leaseMs, marginMs, waiting: true }).finally(() => this.alone.delete(attempt));
  }
}
