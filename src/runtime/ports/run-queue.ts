// The run queue port (S2): carries "run X is ready to be claimed" across processes, so worker
// processes on other machines wake up for runs admitted by any server. The run row and its lease
// stay the source of truth for who executes a run (R17): a delivery only invites a worker to try
// the guarded claim, and a delivery for a run that is already claimed or settled is a no-op.
// Deliveries may therefore be duplicated or lost without harm; a periodic sweep re-announces
// runs that are queued or whose lease expired.

/** One delivery of a ready run; `done` acknowledges it, whether the claim succeeded or not. */
export type RunDelivery = { runId: string; done(): Promise<void> };

export interface RunQueue {
  /**
   * Announces runs as ready (admission, hand-back, sweep); announcing one twice is harmless.
   * `first`: orphaned runs (their attempt died or was handed back), delivered before runs that
   * were only queued, however many wait.
   */
  enqueue(runIds: string[], options?: { first?: boolean }): Promise<void>;
  /** Takes up to `limit` ready runs, or none. */
  take(limit: number): Promise<RunDelivery[]>;
  /**
   * Calls `listener` whenever runs were announced in any process (more than once is harmless),
   * so an idle worker takes them at once; returns the unsubscribe function.
   */
  onReady(listener: () => void): () => void;
  close(): Promise<void>;
}
