// A run queue inside one process: the same contract as the PostgreSQL queue (deduplicated,
// acknowledged deliveries) for a single process and for tests on the embedded database.
import type { RunDelivery, RunQueue } from "../ports/run-queue.js";

export class InProcessRunQueue implements RunQueue {
  private readonly ready = new Set<string>();

  async enqueue(runIds: string[]): Promise<void> {
    for (const runId of runIds) this.ready.add(runId);
  }

  async take(limit: number): Promise<RunDelivery[]> {
    const taken = [...this.ready].slice(0, Math.max(0, limit));
    for (const runId of taken) this.ready.delete(runId);
    return taken.map((runId) => ({ runId, done: async () => undefined }));
  }

  async close(): Promise<void> {
    this.ready.clear();
  }
}
