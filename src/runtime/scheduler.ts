// The scheduler (issue 41): runs beside the worker in every process that executes runs, and fires
// due schedules. It sleeps until the earliest next fire, at most `pollMs` (a schedule created or
// changed in another process is seen within it), so a schedule every 2 seconds fires on time.
// Several schedulers on one PostgreSQL database share the work safely (schedule-firing.ts).
// A pass looks whether the scheduler was stopped before each fire: stop() waits for one fire (one
// transaction) at most, however many schedules are due, so a process stopping goes on to hand its
// runs back.
import type { FireDueOptions } from "../domain/schedules/schedule-firing.js";
import type { Logger } from "../logger.js";

export type SchedulerWork = {
  fireDue(options?: FireDueOptions): Promise<number>;
  earliestDue(): Promise<Date | null>;
};

/** The longest sleep between two looks at the schedules. */
export const SCHEDULER_POLL_MS = 1_000;

export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private runningSince: Date | undefined;

  constructor(private readonly deps: { work: SchedulerWork; logger: Logger; pollMs?: number }) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.runningSince = new Date();
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick();
    }, delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const pollMs = this.deps.pollMs ?? SCHEDULER_POLL_MS;
    let delay = pollMs;
    try {
      const passStart = Date.now();
      const recorded = await this.deps.work.fireDue({
        failed: (scheduleId, error) => this.deps.logger.error("schedule fire failed", { schedule: scheduleId, error: String(error) }),
        runningSince: this.runningSince,
        stopping: () => this.stopped,
      });
      if (this.stopped) return;
      const next = await this.deps.work.earliestDue();
      // A schedule due before a pass that recorded nothing is one the pass could not take (another
      // scheduler holds it): the next look waits a poll rather than coming round at once.
      const couldNotTake = next !== null && recorded === 0 && next.getTime() <= passStart;
      if (next && !couldNotTake) delay = Math.min(pollMs, Math.max(0, next.getTime() - Date.now()));
    } catch (error) {
      if (!this.stopped) this.deps.logger.error("scheduler pass failed", { error: String(error) });
    }
    this.schedule(delay);
  }
}
