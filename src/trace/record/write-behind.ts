// An attempt's trace, written behind its work: span starts, changes, ends and events are queued
// in the order the runtime makes them and written by one writer per attempt, so a turn does not
// wait one round trip for each of them between a model's answer and its next request. Queued
// events next to each other go to the database together (one statement). Every write still
// carries the attempt's fence (the recorder writes them as it always did), so an attempt that
// lost its run writes nothing more; changes are announced after their commit, in seq order.
//
// A failed write stops the pipeline: it writes nothing after it (no later record is written
// without the earlier ones), and the failure is thrown by the attempt's next trace call and by
// `flushed`, which the attempt awaits before it settles — nothing is dropped silently.

/** An event as queued: written with the events next to it, `resolve`d with its seq once committed. */
export type QueuedEvent = { resolve: (seq: number) => void; reject: (error: unknown) => void; payload: string };

type Job<E extends QueuedEvent> =
  | { type: "write"; write: () => Promise<unknown>; resolve: (value: unknown) => void; reject: (error: unknown) => void }
  | { type: "event"; event: E };

/** One write holds at most this many events, or about this many characters of payload. */
const BATCH_EVENTS = 256;
const BATCH_CHARS = 4_000_000;

const ignore = () => undefined;

/** Whether a write holding `count` events of `chars` characters takes one more (always the first). */
const takesMore = (count: number, chars: number) => count < BATCH_EVENTS && (count === 0 || chars < BATCH_CHARS);

/** The events at the front of `pending` that make one write (always at least one). */
export function takeBatch<T extends { payload: string }>(pending: T[]): T[] {
  let count = 0;
  let chars = 0;
  while (count < pending.length && takesMore(count, chars)) {
    chars += pending[count]!.payload.length;
    count += 1;
  }
  return pending.splice(0, count);
}

export class WriteBehind<E extends QueuedEvent> {
  private readonly jobs: Job<E>[] = [];
  private writing = false;
  private failure: { error: unknown } | null = null;

  /** `writeEvents` writes events in one statement and settles each of them. */
  constructor(private readonly writeEvents: (batch: E[]) => Promise<void>) {}

  /** Throws what stopped the pipeline, once a write failed. */
  check(): void {
    if (this.failure) throw this.failure.error;
  }

  /** Queues a write; resolves with its value once it committed (rejects with the pipeline's failure). */
  enqueue<T>(write: () => Promise<T>): Promise<T> {
    if (this.failure) return Promise.reject(this.failure.error);
    return new Promise<T>((resolve, reject) => {
      this.jobs.push({ type: "write", write, resolve: resolve as (value: unknown) => void, reject });
      this.start();
    });
  }

  /** Queues a write nobody waits for: its failure stops the pipeline, and is thrown by the next call. */
  detach(write: () => Promise<unknown>): void {
    this.check();
    this.jobs.push({ type: "write", write, resolve: ignore, reject: ignore });
    this.start();
  }

  event(event: E): void {
    if (this.failure) {
      event.reject(this.failure.error);
      return;
    }
    this.jobs.push({ type: "event", event });
    this.start();
  }

  /** Resolves once everything queued so far is committed; rejects with the failure that stopped the pipeline. */
  flushed(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure.error);
    if (!this.writing && this.jobs.length === 0) return Promise.resolve();
    return this.enqueue(async () => undefined);
  }

  private start(): void {
    if (this.writing) return;
    this.writing = true;
    void this.drain();
  }

  private async drain(): Promise<void> {
    while (this.jobs.length > 0) {
      if (this.failure) {
        for (const job of this.jobs.splice(0)) (job.type === "event" ? job.event.reject : job.reject)(this.failure.error);
        break;
      }
      const front = this.jobs[0]!;
      if (front.type === "event") {
        const batch = this.takeEvents();
        try {
          await this.writeEvents(batch);
        } catch (error) {
          this.failure = { error };
          for (const event of batch) event.reject(error);
        }
        continue;
      }
      this.jobs.shift();
      try {
        front.resolve(await front.write());
      } catch (error) {
        this.failure = { error };
        front.reject(error);
      }
    }
    this.writing = false;
  }

  /** The events at the front of the queue that make one write (at least one). */
  private takeEvents(): E[] {
    const batch: E[] = [];
    let chars = 0;
    while (takesMore(batch.length, chars)) {
      const job = this.jobs[0];
      if (job?.type !== "event") break;
      this.jobs.shift();
      batch.push(job.event);
      chars += job.event.payload.length;
    }
    return batch;
  }
}
