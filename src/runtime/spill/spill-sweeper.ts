// Releases spill handles that outlived their run (R12): a worker that died between a run's end
// and its settle steps leaves them live. Only runs already in a terminal state are swept, so a
// live run's handles are never touched. It runs on an interval while the worker runs.
import type { Logger } from "../../logger.js";
import type { SpillStore } from "../ports/spill-store.js";

export class SpillSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(private readonly deps: { store: SpillStore; intervalMs: number; logger: Logger }) {}

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

  /** One sweep; returns how many handles it released. Overlapping calls share one sweep. */
  sweep(): Promise<number> {
    this.running ??= this.deps.store
      .sweep()
      .then((released) => {
        if (released > 0) this.deps.logger.info("released spill handles of settled runs", { released });
        return released;
      })
      .catch((error: unknown) => {
        this.deps.logger.error("sweeping spill handles failed", { error: String(error) });
        return 0;
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
