// A run queue inside one process: the same contract as the PostgreSQL queue (deduplicated,
// acknowledged deliveries, a wake-up for every announcement) for tests on the embedded database.
import type { RunDelivery, RunQueue } from "../../src/runtime/ports/run-queue.js";

export class InProcessRunQueue implements RunQueue {
  private readonly ready = new Set<string>();
  private readonly listeners = new Set<() => void>();

  async enqueue(runIds: string[]): Promise<void> {
    for (const runId of runIds) this.ready.add(runId);
    if (runIds.length > 0) for (const listener of this.listeners) listener();
  }

  async take(limit: number): Promise<RunDelivery[]> {
    const taken = [...this.ready].slice(0, Math.max(0, limit));
    for (const runId of taken) this.ready.delete(runId);
    return taken.map((runId) => ({ runId, done: async () => undefined }));
  }

  onReady(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.ready.clear();
    this.listeners.clear();
  }
}
