// The run queue on PostgreSQL through pg-boss (S2). pg-boss keeps its own `pgboss` schema (it
// creates and migrates it at start under an advisory lock, apart from Dossier's migrations).
// The queue uses the "short" policy with the run id as singleton key: at most one waiting job
// per run, so announcing a run again (sweep, several servers) adds nothing.
import PgBoss from "pg-boss";
import type { Logger } from "../../logger.js";
import type { RunDelivery, RunQueue } from "../ports/run-queue.js";

const QUEUE = "dossier-run-ready";

export class PgBossRunQueue implements RunQueue {
  private constructor(private readonly boss: PgBoss) {}

  /** Connects, creates pg-boss's schema and the queue when missing. */
  static async start({ url, logger, max = 3 }: { url: string; logger: Logger; max?: number }): Promise<PgBossRunQueue> {
    const boss = new PgBoss({
      connectionString: url,
      schema: "pgboss",
      max,
      // No cron schedules; maintenance (expiry, archiving) keeps running in every process.
      schedule: false,
      application_name: "dossier-run-queue",
    });
    boss.on("error", (error: Error) => logger.error("the run queue reported an error", { error: String(error) }));
    await boss.start();
    await boss.createQueue(QUEUE, {
      name: QUEUE,
      policy: "short",
      // A delivery is acknowledged right after the claim attempt; one whose worker died before
      // that simply expires, and the sweep announces the run again.
      retryLimit: 0,
      expireInSeconds: 60,
      retentionMinutes: 60,
    });
    return new PgBossRunQueue(boss);
  }

  async enqueue(runIds: string[]): Promise<void> {
    for (const runId of runIds) await this.boss.send(QUEUE, { runId }, { singletonKey: runId });
  }

  async take(limit: number): Promise<RunDelivery[]> {
    if (limit <= 0) return [];
    const jobs = await this.boss.fetch<{ runId: string }>(QUEUE, { batchSize: limit });
    return jobs.map((job) => ({
      runId: job.data.runId,
      done: async () => {
        await this.boss.complete(QUEUE, job.id);
      },
    }));
  }

  async close(): Promise<void> {
    await this.boss.stop({ graceful: false, wait: true, timeout: 1_000 });
  }
}
