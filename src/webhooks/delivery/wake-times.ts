// The times a webhook queue must look again by itself: when a retry it recorded falls due (and, on
// PostgreSQL, when a job it queued may start). One timer, at the earliest; a time further out than
// the queue's idle look is left to that look.
export class WakeTimes {
  /** Pending times, earliest first. */
  private readonly times: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private closed = false;

  constructor(
    private readonly wake: () => void,
    /** The most times kept: the latest beyond them are found by the queue's idle look. */
    private readonly most = 1_000,
  ) {}

  /** Wakes the queue at `time` (milliseconds since the epoch). */
  at(time: number): void {
    if (this.closed) return;
    let index = this.times.findIndex((t) => t >= time);
    if (index === -1) index = this.times.length;
    if (this.times[index] === time) return;
    this.times.splice(index, 0, time);
    if (this.times.length > this.most) this.times.pop();
    this.arm();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.times.length = 0;
  }

  private arm(): void {
    const first = this.times[0];
    if (first === undefined || first >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = first;
    // setTimeout holds at most about 24.8 days.
    this.timer = setTimeout(() => this.fire(), Math.min(2 ** 31 - 1, Math.max(0, first - Date.now())));
    this.timer.unref();
  }

  private fire(): void {
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = Date.now();
    while (this.times.length > 0 && this.times[0]! <= now) this.times.shift();
    if (this.closed) return;
    this.wake();
    this.arm();
  }
}
