// When the worker looks for runs to claim: one claim pass at a time, run when the wake path says
// runs were announced, when a slot frees up, and on the lease sweep's interval (with the sweep).
// A wake-up during a pass runs one more pass right after it, so no announcement falls between
// two passes; wake-ups meanwhile share that one.
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
