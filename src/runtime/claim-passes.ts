// When the worker looks for runs to claim: one claim pass at a time, run when the wake path says
// runs were announced, when a slot frees up, and on the lease sweep's interval (with the sweep).
// A wake-up during a pass runs one more pass right after it, so no announcement falls between
// two passes; wake-ups meanwhile share that one. A pass claims in rounds (claimInRounds). A pass
// woken only by freed slots is told so (`freedOnly`): the worker skips its claim when its last
// claim found no run waiting — when a hundred runs end together with nothing queued, their
// freed slots cost one claim, not one each.
import type { Logger } from "../logger.js";
import { together } from "../domain/batched-reads.js";

export class ClaimPasses {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private sweepDue = false;
  /** A wake-up other than a freed slot (an announcement, the sweep) came since the last pass began. */
  private lookDue = false;
  private stopped = true;

  constructor(
    private readonly deps: {
      /** One pass; `sweep` says the lease sweep is due first, `freedOnly` that only freed slots woke it. */
      pass: (due: { sweep: boolean; freedOnly: boolean }) => Promise<void>;
      sweepMs: number;
      logger: Logger;
    },
  ) {}

  /** Sweeps and claims at once, then sweeps every sweepMs. */
  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.wake({ sweep: true }), this.deps.sweepMs);
    this.wake({ sweep: true });
  }

  /** Stops waking; resolves once the pass in progress, if any, has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    while (this.running) await this.running;
  }

  /** Runs a pass now, or right after the one in progress; `freed`: a slot freed up (nothing was announced). */
  wake({ sweep = false, freed = false }: { sweep?: boolean; freed?: boolean } = {}): void {
    if (this.stopped) return;
    if (sweep) this.sweepDue = true;
    if (!freed) this.lookDue = true;
    if (this.running) {
      this.again = true;
      return;
    }
    const due = { sweep: this.sweepDue, freedOnly: !this.lookDue };
    this.sweepDue = false;
    this.lookDue = false;
    this.running = this.deps
      .pass(due)
      .catch((error: unknown) => this.deps.logger.error("claiming runs failed", { error: String(error) }))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          // What woke it meanwhile is in sweepDue and lookDue.
          this.wake({ freed: true });
        }
      });
  }
}

/** How much wider each round is than the one before, and the most runs one claim takes. */
const GROWTH = 4;
const MOST_PER_CLAIM = 64;

/**
 * Claims while `free()` says a slot is free, one claim (one transaction) at a time, each taking
 * up to `count` runs. The first round asks for `from` runs (one on an idle worker); while a claim
 * takes all it asked for, the next asks for four times as many (up to MOST_PER_CLAIM, never more
 * than the free slots), so a burst of 100 admissions starts in five claims — 1, 4, 16, 64 and 15
 * runs — and an idle wake-up still costs one claim of one run. A claim's runs are chosen fairly
 * across principals and within each principal's cap (domain/runs/claim-statement.ts); concurrent
 * claims take different runs.
 *
 * Resolves with the width the next pass starts at: the last claim's while it took runs (a burst
 * whose admissions arrive over a second is still coming: the next pass does not start again at
 * one run), else one. A claim costs the same statements whatever it asks for. And with whether
 * runs may be waiting: false only when the last claim took none and said it found none waiting
 * (a claim that does not say is taken to have found some); true when no slot was free to look.
 */
export async function claimInRounds<T>({
  free,
  claim,
  begin,
  from = 1,
}: {
  free: () => number;
  /** A claim's runs; a claim that found no run waiting says so with `runsWaiting: false` on them (ClaimedAttempts). */
  claim: (count: number) => Promise<T[]>;
  begin: (claimed: T) => void;
  from?: number;
}): Promise<{ width: number; runsWaiting: boolean }> {
  let width = Math.max(1, Math.min(from, MOST_PER_CLAIM));
  for (;;) {
    if (free() <= 0) return { width, runsWaiting: true };
    const count = Math.min(width, free());
    const claimed = await claim(count);
    // The claim's runs begin together: what each reads to start goes to the database in one read per kind (batched-reads.ts).
    together(() => {
      for (const run of claimed) begin(run);
    });
    if (claimed.length === 0) return { width: 1, runsWaiting: !("runsWaiting" in claimed) || claimed.runsWaiting !== false };
    if (claimed.length < count) return { width, runsWaiting: true };
    width = Math.min(width * GROWTH, MOST_PER_CLAIM);
  }
}
