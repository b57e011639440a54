// Cleanup that runs on an interval while the worker runs, as one of its companions: the spill
// sweeper releases spill handles that outlived their run (R12), the artifact sweeper frees the
// content of expired temporary artifacts (W16). Every instance that runs a worker runs its own,
// so a sweep must be safe beside the same sweep in another instance.
import type { Logger } from "../logger.js";

export class PeriodicSweep {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly deps: {
      /** One sweep; resolves to how many things it cleaned up. */
      sweep: () => Promise<number>;
      intervalMs: number;
      logger: Logger;
      /** Log messages: what a sweep that cleaned something did, and what failed. */
      swept: string;
      failed: string;
    },
  ) {}

  start(): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => void this.sweep(), this.deps.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** One sweep; returns how many things it cleaned up. Overlapping calls share one sweep. */
  sweep(): Promise<number> {
    this.running ??= this.deps
      .sweep()
      .then((count) => {
        if (count > 0) this.deps.logger.info(this.deps.swept, { count });
        return count;
      })
      .catch((error: unknown) => {
        this.deps.logger.error(this.deps.failed, { error: String(error) });
        return 0;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
