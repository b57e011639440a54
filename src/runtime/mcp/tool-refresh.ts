// Re-listing one connection's tools after `tools/list_changed`, coalesced. A server may send the
// notification as often as it likes, each a few bytes, while each listing it answers can be large
// and costs this process (every principal's) the time to read it. So one connection has at most
// one listing in flight and one waiting; every notification meanwhile joins the waiting one, which
// lists the server's tools as they are when it begins. A listing begins at least `intervalMs`
// after the one before it ended.

/** The least time between the end of one re-listing of a connection's tools and the next one's start. */
export const RELIST_INTERVAL_MS = 1_000;

export class ToolRefresh {
  /** A notification not yet answered by a listing that began after it. */
  private pending = false;
  /** A listing in flight, or waiting for the interval to pass. */
  private busy = false;
  private stopped = false;
  private lastEnded = Number.NEGATIVE_INFINITY;
  private wake?: { timer: NodeJS.Timeout; resolve: () => void };

  constructor(
    private readonly list: () => Promise<void>,
    private readonly intervalMs: number = RELIST_INTERVAL_MS,
  ) {}

  /** The server said its tools changed: a listing follows, soon but never more often than the interval allows. */
  request(): void {
    if (this.stopped) return;
    this.pending = true;
    if (!this.busy) void this.drain();
  }

  /** The connection closed: no listing begins any more. */
  stop(): void {
    this.stopped = true;
    if (this.wake) {
      clearTimeout(this.wake.timer);
      this.wake.resolve();
    }
  }

  private async drain(): Promise<void> {
    this.busy = true;
    try {
      while (this.pending && !this.stopped) {
        const wait = this.lastEnded + this.intervalMs - performance.now();
        if (wait > 0) await this.sleep(wait);
        if (this.stopped) return;
        this.pending = false;
        // `list` reports its own failures; a failed listing is answered by the next notification.
        await this.list().catch(() => undefined);
        this.lastEnded = performance.now();
      }
    } finally {
      this.busy = false;
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      timer.unref();
      this.wake = { timer, resolve };
    });
  }
}
