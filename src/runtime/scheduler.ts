// The scheduler (issue 41): runs beside the worker in every process that executes runs, and fires
// due schedules. It sleeps until the earliest next fire. A schedule created, changed or resumed, or
// its workspace restored, wakes it at once when the process hears those changes (`changes`: the
// embedded database's one process, or every instance through Redis); it then looks by itself only
// every SCHEDULER_IDLE_POLL_MS. Without them (PostgreSQL without Redis, where another instance's
// change is not heard) it looks at least every `pollMs`, so a schedule every 2 seconds fires on time.
// Several schedulers on one PostgreSQL database share the work safely (schedule-firing.ts).
// A pass looks whether the scheduler was stopped before each fire: stop() waits for one fire (one
// transaction) at most, however many schedules are due, so a process stopping goes on to hand its
// runs back.
import type { FireDueOptions } from "../domain/schedules/schedule-firing.js";
import { keepListening, type Listening } from "../events/keep-listening.js";
import type { EventBus } from "../events/topics.js";
import type { Logger } from "../logger.js";

export type SchedulerWork = {
  fireDue(options?: FireDueOptions): Promise<number>;
  earliestDue(): Promise<Date | null>;
};

/** The longest sleep between two looks at the schedules when changes made elsewhere are not heard. */
export const SCHEDULER_POLL_MS = 1_000;
/** The longest sleep when every change is heard (`changes`): a look for what no one announced. */
export const SCHEDULER_IDLE_POLL_MS = 60_000;

export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private runningSince: Date | undefined;
  private listening: Listening | undefined;
  /** A pass is under way. */
  private passing = false;
  /** Woken during a pass: another pass right after it. */
  private again = false;

  constructor(
    private readonly deps: {
      work: SchedulerWork;
      logger: Logger;
      pollMs?: number;
      /** The bus on which every schedule change reaches this process (schedule:changed). */
      changes?: EventBus;
    },
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.runningSince = new Date();
    const { changes } = this.deps;
    if (changes)
      this.listening = keepListening({
        what: "schedule changes",
        subscribe: () => changes.subscribe("schedule:changed"),
        onEvent: () => this.wake(),
        onResumed: () => this.wake(),
        logger: this.deps.logger,
      });
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.listening?.stop();
    await this.running;
  }

  /** Looks at the schedules now (or right after the pass under way). */
  wake(): void {
    if (this.stopped) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
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
    let delay = this.deps.pollMs ?? (this.deps.changes ? SCHEDULER_IDLE_POLL_MS : SCHEDULER_POLL_MS);
    this.passing = true;
    this.again = false;
    try {
      const passStart = Date.now();
      const recorded = await this.deps.work.fireDue({
        failed: (scheduleId, error) => this.deps.logger.error("schedule fire failed", { schedule: scheduleId, error: String(error) }),
        runningSince: this.runningSince,
        stopping: () => this.stopped,
      });
      if (this.stopped) {
        this.passing = false;
        return;
      }
      const next = await this.deps.work.earliestDue();
      // A schedule due before a pass that recorded nothing is one the pass could not take (another
      // scheduler holds it): the next look waits a poll rather than coming round at once.
      const couldNotTake = next !== null && recorded === 0 && next.getTime() <= passStart;
      if (couldNotTake) delay = pollMs;
      else if (next) delay = Math.min(delay, Math.max(0, next.getTime() - Date.now()));
    } catch (error) {
      if (!this.stopped) this.deps.logger.error("scheduler pass failed", { error: String(error) });
      delay = pollMs;
    }
    this.passing = false;
    this.schedule(this.again ? 0 : delay);
  }
}
