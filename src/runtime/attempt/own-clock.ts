// An attempt's own clock (R17, R18): an attempt stops itself once it cannot know it still holds
// its lease, before any other instance may take the run over — even when the database does not
// answer at all (a link that hangs tells the attempt nothing).
//
// The lease lives in the database: a renewal sets lease_expires_at to the database's now() plus
// the lease, and a claim takes a run over only once the database's now() is past that plus the
// margin. The attempt measures on this process's monotonic clock from the moment it *sent* its
// last successful renewal (or its claim), which is no later than the database's now() of that
// statement; it aborts at lease − margin. Between its abort and the earliest takeover there are
// therefore at least two margins, for the abort to reach the model request and every tool and
// MCP call. Only elapsed times are compared, never two machines' wall clocks: what must stay
// bounded is how far the instances' clocks drift over one lease, not their offset.

/** Performance time in ms: monotonic, unaffected by wall-clock adjustments. */
const monotonic = () => performance.now();

export type OwnClockOptions = {
  leaseMs: number;
  marginMs: number;
  /** Called once, when the lease may be about to expire (ms since the last renewal was sent). */
  onExpired: (silentMs: number) => void;
  now?: () => number;
};

export class OwnClock {
  private renewedAt: number;
  private timer: NodeJS.Timeout | undefined;
  private expired = false;
  private stopped = false;
  private readonly now: () => number;

  /** `sentAt`: when the claim that began the lease was sent (see OwnClock.mark). */
  constructor(
    private readonly options: OwnClockOptions,
    sentAt: number,
  ) {
    this.now = options.now ?? monotonic;
    this.renewedAt = sentAt;
    this.schedule();
  }

  /** The time to pass as `sentAt`, taken just before sending a claim or a renewal. */
  static mark(): number {
    return monotonic();
  }

  /** A renewal sent at `sentAt` succeeded: the lease runs from then. */
  renewed(sentAt: number): void {
    // An attempt that ended is not kept again by a renewal answered after its end.
    if (this.expired || this.stopped || sentAt <= this.renewedAt) return;
    this.renewedAt = sentAt;
    this.schedule();
  }

  /** How long ago the last successful renewal (or the claim) was sent. */
  sinceRenewalMs(): number {
    return this.now() - this.renewedAt;
  }

  /** How long the attempt may still act as the run's holder (0 once it must stop). */
  remainingMs(): number {
    if (this.expired) return 0;
    return Math.max(0, this.renewedAt + this.options.leaseMs - this.options.marginMs - this.now());
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.check(), this.remainingMs());
    this.timer.unref();
  }

  private check(): void {
    if (this.remainingMs() > 0) {
      this.schedule();
      return;
    }
    this.expired = true;
    this.timer = undefined;
    this.options.onExpired(this.now() - this.renewedAt);
  }
}
