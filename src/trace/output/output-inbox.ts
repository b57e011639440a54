// What waits for one runOutput subscriber: live output frames and trace changes, each in arrival
// order, bounded together — a subscriber that falls too far behind must resync (as traceUpdates).
import type { RunOutputFrame } from "../../events/topics.js";
import type { TraceUpdate } from "../updates/trace-updates.js";

export class OutputInbox {
  readonly frames: RunOutputFrame[] = [];
  /** Trace changes; "end" when the trace's stream ended. */
  readonly changes: (TraceUpdate | "end")[] = [];
  overflow = false;
  /** A source failed: the subscription fails with its error. */
  failure: { error: unknown } | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly limit: number) {}

  addFrame(frame: RunOutputFrame): void {
    if (this.frames.length + this.changes.length >= this.limit) this.overflow = true;
    else this.frames.push(frame);
    this.wake?.();
  }

  addChange(change: TraceUpdate | "end"): void {
    if (change !== "end" && this.frames.length + this.changes.length >= this.limit) this.overflow = true;
    else this.changes.push(change);
    this.wake?.();
  }

  /** The subscriber left: nothing more is read. */
  closed = false;

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  /** Reads a source into the inbox until it ends (or fails, which ends it too). */
  pump<T>(source: AsyncIterator<T>, add: (item: T) => void, ended?: () => void): void {
    void (async () => {
      try {
        for (let next = await source.next(); !next.done; next = await source.next()) add(next.value);
        ended?.();
      } catch (error) {
        // A failed read (the database went away) fails the subscription rather than ending it quietly.
        this.failure = { error };
        this.wake?.();
      }
    })();
  }

  /** Resolves at the next arrival, or after `ms`. */
  wait(ms?: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.wake === done) self.wake = undefined;
        resolve();
      }
      this.wake = done;
    });
  }
}
