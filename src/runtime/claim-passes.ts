// When the worker looks for runs to claim: one claim pass at a time, run when the wake path says
// runs were announced, when a slot frees up, and on the lease sweep's interval (with the sweep).
// A wake-up during a pass runs one more pass right after it, so no announcement falls between
// two passes; wake-ups meanwhile share that one. A pass claims in rounds (claimInRounds).
import type { Logger } from "../logger.js";
import { together } from "../domain/batched-reads.js";

export class ClaimPasses {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private sweepDue = false;
  private stopped = true;

  constructor(
    private readonly deps: {
      /** One pass; `sweep` says the lease sweep is due first. */
      pass: (sweep: boolean) => Promise<void>;
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

  /** Runs a pass now, or right after the one in progress. */
  wake({ sweep = false }: { sweep?: boolean } = {}): void {
    if (this.stopped) return;
    if (sweep) this.sweepDue = true;
    if (this.running) {
      this.again = true;
      return;
    }
    const sweepNow = this.sweepDue;
    this.sweepDue = false;
    this.running = this.deps
      .pass(sweepNow)
      .catch((error: unknown) => this.deps.logger.error("claiming runs failed", { error: String(error) }))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
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
 * one run), else one. A claim costs the same statements whatever it asks for.
 */
export async function claimInRounds<T>({
  free,
  claim,
  begin,
  from = 1,
}: {
  free: () => number;
  claim: (count: number) => Promise<T[]>;
  begin: (claimed: T) => void;
  from?: number;
}): Promise<number> {
  let width = Math.max(1, Math.min(from, MOST_PER_CLAIM));
  for (;;) {
    if (free() <= 0) return width;
    const count = Math.min(width, free());
    const claimed = await claim(count);
    // The claim's runs begin together: what each reads to start goes to the database in one read per kind (batched-reads.ts).
    together(() => {
      for (const run of claimed) begin(run);
    });
    if (claimed.length === 0) return 1;
    if (claimed.length < count) return width;
    width = Math.min(width * GROWTH, MOST_PER_CLAIM);
  }
}
