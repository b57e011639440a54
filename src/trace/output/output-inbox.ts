// What waits for one runOutput subscriber: live output frames, bounded — a subscriber that falls
// too far behind must resync, as with traceUpdates — and the run's trace changes, read from the
// trace's own stream only a few ahead of the subscriber: that stream replays from the database
// as fast as it is read and bounds its live buffer itself, so a long replay never overflows here.
import { MissedEventsError, type RunOutputFrame } from "../../events/topics.js";
import type { TraceUpdate } from "../updates/trace-updates.js";

/** Trace changes read ahead of the subscriber. */
const CHANGES_AHEAD = 64;

export class OutputInbox {
  private readonly frames: RunOutputFrame[] = [];
  /** Trace changes; "end" when the trace's stream ended. */
  private readonly changes: (TraceUpdate | "end")[] = [];
  overflow = false;
  /** A source failed: the subscription fails with its error. */
  failure: { error: unknown } | undefined;
  /** The subscriber left: nothing more is read. */
  closed = false;
  private wake: (() => void) | undefined;
  private room: (() => void) | undefined;

  constructor(private readonly limit: number) {}

  /** Reads the output frames into the inbox as they come. */
  readFrames(source: AsyncIterator<RunOutputFrame>): void {
    this.pump(source, (frame) => {
      if (this.frames.length >= this.limit) this.overflow = true;
      else this.frames.push(frame);
    });
  }

  /** Reads the trace's changes into the inbox, a few ahead of the subscriber; "end" after the last. */
  readChanges(source: AsyncIterator<TraceUpdate>): void {
    this.pump(
      source,
      (change) => this.changes.push(change),
      () => this.changes.push("end"),
      async () => {
        while (this.changes.length >= CHANGES_AHEAD && !this.closed) await new Promise<void>((resolve) => (this.room = resolve));
      },
    );
  }

  /** The next frame, left in the inbox. */
  peekFrame(): RunOutputFrame | undefined {
    return this.frames[0];
  }

  nextFrame(): RunOutputFrame | undefined {
    return this.frames.shift();
  }

  nextChange(): TraceUpdate | "end" | undefined {
    const change = this.changes.shift();
    if (this.changes.length < CHANGES_AHEAD) this.room?.();
    return change;
  }

  close(): void {
    this.closed = true;
    this.wake?.();
    this.room?.();
  }

  /** Wakes the subscriber's loop (something it waits for changed). */
  poke(): void {
    this.wake?.();
  }

  /** Fails the subscription with `error`. */
  fail(error: unknown): void {
    this.failure ??= { error };
    this.wake?.();
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

  /** Reads a source until it ends; a failure (the database went away) fails the subscription rather than ending it quietly. */
  private pump<T>(source: AsyncIterator<T>, add: (item: T) => void, ended?: () => void, before?: () => Promise<void>): void {
    void (async () => {
      try {
        for (;;) {
          await before?.();
          if (this.closed) return;
          const next = await source.next();
          if (next.done) break;
          add(next.value);
          this.wake?.();
        }
        ended?.();
      } catch (error) {
        // Output missed (the bus's link was lost): the subscriber resyncs, as after a burst.
        if (error instanceof MissedEventsError) this.overflow = true;
        else this.failure = { error };
      }
      this.wake?.();
    })();
  }
}
