// The run announcer port (S2): tells the workers that runs are ready to be claimed — a run just
// admitted, the next run of a conversation whose slot was freed, a run handed back. Whoever made
// a run ready calls it after the commit that did, never inside the transaction: a worker woken
// for a run it cannot see yet finds nothing to claim. Announcing is best effort — the run row and
// its lease decide who executes a run (R17), and a run whose announcement was lost is found by
// the workers' lease sweep. The composition root chooses the adapter: the PostgreSQL job queue
// across processes, or the in-process event bus on the embedded default.
export interface RunAnnouncer {
  /**
   * Announces the runs as ready; resolves once they are announced and never rejects (a failure
   * is logged). Announcing a run twice is harmless.
   */
  announce(runIds: readonly string[]): Promise<void>;
}
