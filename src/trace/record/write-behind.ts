// An attempt's trace, written behind its work: span starts, changes, ends and events are queued
// in the order the runtime makes them and written by one writer per attempt, so a turn does not
// wait one round trip for each of them between a model's answer and its next request. Records
// queued next to each other (span starts, ends that only set a status, events) go to the
// database together, in one statement (domain/trace/batch-statements.ts); other writes (what
// charges the run, attribute changes) go one by one between them. Every write carries the
// attempt's fence, so an attempt that lost its run writes nothing more; changes are announced
// after their commit, in seq order. A one-statement write of the attempt that can carry them (a
// tool result's log entry) takes the records queued right before it into its own statement.
//
// A failed write stops the pipeline: it writes nothing after it (no later record is written
// without the earlier ones), and the failure is thrown by the attempt's next trace call and by
// `flushed`, which the attempt awaits before it settles — nothing is dropped silently.

/**
 * A record as queued: written with the records next to it, `resolve`d with its seq once committed.
 * `payload`: what it writes of any size (an event's payload, a span's attributes), which bounds a batch.
 */
export type QueuedRecord = { resolve: (seq: number) => void; reject: (error: unknown) => void; payload: string };

type Settle = { resolve: (value: unknown) => void; reject: (error: unknown) => void };

type Job<E extends QueuedRecord> =
  | ({ type: "write"; write: () => Promise<unknown> } & Settle)
  /** A write that takes the records queued right before it (none: it goes without blocking what follows). */
  | ({ type: "carry"; write: (records: E[]) => Promise<unknown> } & Settle)
  | { type: "record"; record: E };

/** One write holds at most this many records, or about this many characters of payload. */
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

export class WriteBehind<E extends QueuedRecord> {
  private readonly jobs: Job<E>[] = [];
  /** A drain is running or scheduled (`scheduled`, its setImmediate). */
  private writing = false;
  private scheduled: NodeJS.Immediate | undefined;
  private failure: { error: unknown } | null = null;

  /** `writeRecords` writes records queued next to each other (in one statement) and settles each of them. */
  constructor(private readonly writeRecords: (batch: E[]) => Promise<void>) {}

  /** Throws what stopped the pipeline, once a write failed. */
  check(): void {
    if (this.failure) throw this.failure.error;
  }

  /** Queues a write; resolves with its value once it committed (rejects with the pipeline's failure). */
  enqueue<T>(write: () => Promise<T>): Promise<T> {
    if (this.failure) return Promise.reject(this.failure.error);
    return new Promise<T>((resolve, reject) => {
      this.jobs.push({ type: "write", write, resolve: resolve as (value: unknown) => void, reject });
      // Someone waits for it: nothing more to wait for.
      this.start(true);
    });
  }

  /**
   * Queues a write that is handed the records queued right before it, not yet written, to write
   * with its own (it settles them); resolves with its value once it committed. With records, what
   * follows waits for it, as for any write of records; without, it goes once everything before it
   * is written, and what follows does not wait for it. A failure of a write that held records
   * stops the pipeline.
   */
  carry<T>(write: (records: E[]) => Promise<T>): Promise<T> {
    if (this.failure) return Promise.reject(this.failure.error);
    return new Promise<T>((resolve, reject) => {
      this.jobs.push({ type: "carry", write, resolve: resolve as (value: unknown) => void, reject });
      this.start(true);
    });
  }

  /** Starts writing what is queued now, without waiting for the work in hand to queue more. */
  writeNow(): void {
    if (this.scheduled) this.start(true);
  }

  /** Queues a write nobody waits for: its failure stops the pipeline, and is thrown by the next call. */
  detach(write: () => Promise<unknown>): void {
    this.check();
    this.jobs.push({ type: "write", write, resolve: ignore, reject: ignore });
    this.start();
  }

  record(record: E): void {
    if (this.failure) {
      record.reject(this.failure.error);
      return;
    }
    this.jobs.push({ type: "record", record });
    this.start();
  }

  /** Resolves once everything queued so far is committed; rejects with the failure that stopped the pipeline. */
  flushed(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure.error);
    if (!this.writing && this.jobs.length === 0) return Promise.resolve();
    return this.enqueue(async () => undefined);
  }

  /**
   * Starts writing once the work in hand has queued what it makes without waiting (setImmediate):
   * a turn's records made one after the other — a span's end, the next span's start, the note
   * between — go in one write instead of the first alone and the rest after it. `now`: at once
   * (a write waited for, or writeNow).
   */
  private start(now = false): void {
    if (now && this.scheduled) {
      clearImmediate(this.scheduled);
      this.scheduled = undefined;
      void this.drain();
      return;
    }
    if (this.writing) return;
    this.writing = true;
    if (now) void this.drain();
    else
      this.scheduled = setImmediate(() => {
        this.scheduled = undefined;
        void this.drain();
      });
  }

  private async drain(): Promise<void> {
    while (this.jobs.length > 0) {
      if (this.failure) {
        for (const job of this.jobs.splice(0)) (job.type === "record" ? job.record.reject : job.reject)(this.failure.error);
        break;
      }
      const front = this.jobs[0]!;
      if (front.type === "record") {
        const batch = this.takeRecords();
        const carrier = this.jobs[0]?.type === "carry" ? (this.jobs.shift() as Job<E> & { type: "carry" }) : undefined;
        try {
          if (carrier) carrier.resolve(await carrier.write(batch));
          else await this.writeRecords(batch);
        } catch (error) {
          this.failure = { error };
          for (const record of batch) record.reject(error);
          carrier?.reject(error);
        }
        continue;
      }
      this.jobs.shift();
      if (front.type === "carry") {
        void (async () => front.write([]))().then(front.resolve, front.reject);
        continue;
      }
      try {
        front.resolve(await front.write());
      } catch (error) {
        this.failure = { error };
        front.reject(error);
      }
    }
    this.writing = false;
  }

  /** The records at the front of the queue that make one write (at least one). */
  private takeRecords(): E[] {
    const batch: E[] = [];
    let chars = 0;
    while (takesMore(batch.length, chars)) {
      const job = this.jobs[0];
      if (job?.type !== "record") break;
      this.jobs.shift();
      batch.push(job.record);
      chars += job.record.payload.length;
    }
    return batch;
  }
}

/**
 * Events written without an attempt's writer, group-committed per trace: the first is written at
 * once, and those that arrive while a write is in flight go together in the next one, in order.
 */
export class GroupCommit<E extends QueuedRecord & { traceId: string }> {
  private readonly queues = new Map<string, E[]>();

  /** `write` writes events of one trace in one statement and settles each of them. */
  constructor(private readonly write: (batch: E[]) => Promise<void>) {}

  add(event: E): void {
    const pending = this.queues.get(event.traceId);
    if (pending) return void pending.push(event);
    const queue = [event];
    this.queues.set(event.traceId, queue);
    void this.flush(event.traceId, queue);
  }

  private async flush(traceId: string, pending: E[]): Promise<void> {
    while (pending.length > 0) {
      const batch = takeBatch(pending);
      try {
        await this.write(batch);
      } catch (error) {
        for (const event of batch) event.reject(error);
      }
    }
    this.queues.delete(traceId);
  }
}
