// When the worker looks for runs to claim: one claim pass at a time, run when the wake path says
// runs were announced, when a slot frees up, and on the lease sweep's interval (with the sweep).
// A wake-up during a pass runs one more pass right after it, so no announcement falls between
// two passes; wake-ups meanwhile share that one. A pass claims in rounds (claimInRounds).
import type { Logger } from "../logger.js";

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

/** The most claims one pass sends at once. */
const PARALLEL_CLAIMS = 8;

/**
 * Claims while `free()` says a slot is free. The first round sends one claim; while every claim
 * finds a run, the next sends twice as many at once (up to PARALLEL_CLAIMS), so a burst of
 * admissions starts in a fraction of the round trips one claim after another took, and an idle
 * wake-up still costs one claim. Concurrent claims take different runs (the claim skips locked
 * rows) and a principal's cap holds across them (domain/runs/claim.ts).
 */
export async function claimInRounds<T>({
  free,
  claim,
  begin,
}: {
  free: () => number;
  claim: () => Promise<T | null>;
  begin: (claimed: T) => void;
}): Promise<void> {
  for (let width = 1; free() > 0; width = Math.min(width * 2, PARALLEL_CLAIMS)) {
    const count = Math.min(width, free());
    const claims = await Promise.allSettled(Array.from({ length: count }, claim));
    // Every run claimed begins, even when another claim of the round failed.
    let claimed = 0;
    for (const result of claims) {
      if (result.status === "fulfilled" && result.value) {
        begin(result.value);
        claimed += 1;
      }
    }
    const failed = claims.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    if (claimed < count) return;
  }
}
