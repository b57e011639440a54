// The run queue on PostgreSQL through pg-boss (S2). pg-boss keeps its own `pgboss` schema (it
// creates and migrates it at start under an advisory lock, apart from Dossier's migrations; its
// queue is created under Dossier's own, pg-boss-setup.ts).
// The queue uses the "short" policy with the run id as singleton key: at most one waiting job
// per run, so announcing a run again (sweep, several servers) adds nothing. pg-boss only hands
// jobs out when asked, so every announcement also sends a NOTIFY that idle workers LISTEN for:
// a worker in any process takes a run the moment it is announced, without polling the queue.
import type pg from "pg";
import type PgBoss from "pg-boss";
import { batchedRead } from "../../domain/batched-reads.js";
import { boundedWaits, CLOSE_WAIT_MS, type DatabaseTimeouts, endClient, settledWithin } from "../../db/bounded-waits.js";
import { underSetupLock } from "../../db/pg-boss-setup.js";
import { type PreparedPool, preparedPool } from "../../db/prepared-pool.js";
import type { RunAnnouncer } from "../../domain/runs/run-announcer.js";
import type { Logger } from "../../logger.js";
import type { RunDelivery, RunQueue } from "../ports/run-queue.js";

const QUEUE = "dossier-run-ready";
const CHANNEL = "dossier_run_ready";
/** The job priority of orphaned runs (see enqueue); queued runs have 0. */
const ORPHAN_PRIORITY = 10;
/** How long a lost LISTEN connection waits before it connects again (the lease sweep covers the gap). */
const RELISTEN_MS = 1_000;
/** How long runs announced wait at most for the announcement on its way before they go on their own. */
const ANNOUNCE_WAIT_MS = 1_000;
/**
 * How long whoever announces or enqueues runs waits at most for the queue's answer. Announcing is
 * a wake-up, best effort: a worker's sweep finds queued runs whatever the queue does, so a queue
 * whose link hangs must not hold a settled attempt's slot, or a claim pass, until the statement's
 * own bound (DB_QUERY_TIMEOUT_MS). The statement goes on; its failure is logged.
 */
const SEND_WAIT_MS = 2_000;

export class PgBossRunQueue implements RunQueue, RunAnnouncer {
  private readonly listeners = new Set<() => void>();
  private listener: pg.Client | undefined;
  private closed = false;
  /** Runs announced and not yet sent, and the announcement they go out with; the one on its way. */
  private unsent: string[] = [];
  private nextAnnouncement: Promise<void> | undefined;
  private announcing: Promise<void> | undefined;

  private constructor(
    private readonly boss: PgBoss,
    private readonly db: PreparedPool,
    private readonly Client: typeof pg.Client,
    private readonly url: string,
    private readonly logger: Logger,
    private readonly timeouts: Partial<DatabaseTimeouts>,
  ) {}

  /**
   * Connects, creates pg-boss's schema and the queue when missing, and listens for announcements.
   * `listen: false` leaves the notification channel out (tests: announcements made elsewhere then
   * reach this process's workers only through the sweep, as when a notification is lost).
   * `timeouts` bound its connections' waits as the main pool's are (DB_*_TIMEOUT_MS, bounded-waits.ts).
   */
  static async start({
    url,
    logger,
    max = 3,
    listen = true,
    timeouts = {},
  }: {
    url: string;
    logger: Logger;
    max?: number;
    listen?: boolean;
    timeouts?: Partial<DatabaseTimeouts>;
  }): Promise<PgBossRunQueue> {
    // Loaded here: a process on the embedded database has no run queue and need not hold them.
    const [{ default: PgBoss }, { default: pg }] = await Promise.all([import("pg-boss"), import("pg")]);
    const reportError = (error: Error) => logger.error("the run queue reported an error", { error: String(error) });
    // pg-boss's statements are prepared once per connection (prepared-pool.ts).
    const db = preparedPool(pg, { connectionString: url, max, application_name: "dossier-run-queue" }, reportError, timeouts);
    // No cron schedules; maintenance (expiry, archiving) keeps running in every process.
    // Its Db type says rows always come back; after close none do, as with its own pool (prepared-pool.ts).
    const boss = new PgBoss({ db: db as unknown as PgBoss.Db, schema: "pgboss", schedule: false });
    boss.on("error", reportError);
    try {
      // One process at a time (pg-boss-setup.ts): processes started together would deadlock creating queues.
      await underSetupLock(pg.Client, { url, timeouts, applicationName: "dossier-run-queue-setup" }, async () => {
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
      });
      const queue = new PgBossRunQueue(boss, db, pg.Client, url, logger, timeouts);
      if (listen) await queue.listen();
      return queue;
    } catch (error) {
      // A queue that did not start leaves no connection behind.
      await boss.stop({ graceful: false, wait: true, timeout: 1_000 }).catch(() => undefined);
      await db.close();
      throw error;
    }
  }

  async enqueue(runIds: string[], { first = false }: { first?: boolean } = {}): Promise<void> {
    if (runIds.length === 0) return;
    // This process's workers at once; the others when the notification reaches them.
    this.ready();
    // pg-boss hands out jobs by priority, then age: orphaned runs do not wait behind the queue.
    const sending = this.send(runIds, first ? ORPHAN_PRIORITY : 0);
    // A failure within SEND_WAIT_MS is the caller's to handle; one later is logged here.
    if (await settledWithin(sending, SEND_WAIT_MS)) return sending;
    sending.catch((error: unknown) => this.logger.warn("announcing runs on the queue failed", { runIds, error: String(error) }));
  }

  /**
   * The announcer side of the queue: best effort, after the commit that made the runs ready. The
   * runs announced while an announcement is on its way go out together when it is answered — one
   * NOTIFY and one insert for all of them, each a round trip that costs the sender a wake-up of
   * the database's process: when a hundred admissions commit within milliseconds, the API sends a
   * few announcements, not a hundred of each. One announced while none is on its way goes at once;
   * one that hangs holds the next back for a second at most (then both are on their way).
   */
  announce(runIds: readonly string[]): Promise<void> {
    // A queue closed (its process stopping) announces nothing more: the workers' sweep finds the runs.
    if (runIds.length === 0 || this.closed) return Promise.resolve();
    this.ready();
    for (const runId of runIds) this.unsent.push(runId);
    this.nextAnnouncement ??= this.announceUnsent();
    // It never rejects (announceUnsent logs its failure); a queue that hangs is not waited for long.
    return settledWithin(this.nextAnnouncement, ANNOUNCE_WAIT_MS + SEND_WAIT_MS).then(() => undefined);
  }

  private async announceUnsent(): Promise<void> {
    // An announcement that hangs (a link that stopped answering) holds the next one back a second at most.
    await settledWithin(this.announcing ?? Promise.resolve(), ANNOUNCE_WAIT_MS);
    // From here, runs announced go out with the next announcement.
    this.nextAnnouncement = undefined;
    const runIds = [...new Set(this.unsent.splice(0))];
    this.announcing = this.send(runIds, 0).catch((error: unknown) =>
      this.logger.warn("announcing a run on the queue failed", { runIds, error: String(error) }),
    );
    await this.announcing;
  }

  /**
   * One statement for all the runs' jobs (the sweep announces every queued run again); a run that
   * already waits keeps its one job (the queue's singleton key). Workers claim from the run table,
   * whose commit made the runs ready, so the notification goes out beside the jobs' insert, not
   * after it: a worker that wakes first claims the run, and the job it finds (or a later pass
   * finds) is a harmless duplicate. Should the notification be lost, the job waits for the next
   * pass or the sweep.
   */
  private async send(runIds: string[], priority: number): Promise<void> {
    const notifying = this.listener?.query("SELECT pg_notify($1, '')", [CHANNEL]).catch(() => undefined);
    await this.boss.insert(runIds.map((runId) => ({ name: QUEUE, data: { runId }, singletonKey: runId, priority })));
    await notifying;
  }

  /**
   * The deliveries of one take are acknowledged together: those whose `done` is called one after
   * the other (the worker acknowledges all a claim took in one loop) go in one statement, not one
   * each — a burst of runs started in a few claims costs a few acknowledgements, not one per run.
   */
  async take(limit: number): Promise<RunDelivery[]> {
    if (limit <= 0) return [];
    const jobs = await this.boss.fetch<{ runId: string }>(QUEUE, { batchSize: limit });
    return jobs.map((job) => ({ runId: job.data.runId, done: () => this.complete(job.id) }));
  }

  /** Completes a job, with every other job asked to be completed until the event loop's next turn (batched-reads.ts). */
  private readonly complete = batchedRead<string, undefined>({
    readMany: async (ids) => {
      await this.boss.complete(QUEUE, [...ids]);
      return new Map();
    },
    keyOf: (id) => id,
    none: () => undefined,
    alone: "next turn",
  });

  onReady(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    // Runs announced just before go out first (a second at most, as any announcement waits).
    await settledWithin(Promise.all([this.announcing, this.nextAnnouncement]), ANNOUNCE_WAIT_MS);
    // Each step is bounded: on a link that hangs, PostgreSQL's goodbye never comes, and the sockets are dropped.
    if (this.listener) await endClient(this.listener);
    await settledWithin(this.boss.stop({ graceful: false, wait: true, timeout: CLOSE_WAIT_MS }), 2 * CLOSE_WAIT_MS);
    await this.db.close();
  }

  private ready(): void {
    for (const listener of this.listeners) listener();
  }

  /** One connection LISTENs for announcements; when it is lost it connects again after a pause. */
  private async listen(): Promise<void> {
    const { connectionTimeoutMillis, query_timeout, keepAlive } = boundedWaits(this.timeouts);
    const client = new this.Client({
      connectionString: this.url,
      application_name: "dossier-run-queue-listen",
      connectionTimeoutMillis,
      query_timeout,
      keepAlive,
    });
    client.on("notification", () => this.ready());
    client.on("error", (error: Error) => {
      if (this.closed || this.listener !== client) return;
      this.listener = undefined;
      this.logger.warn("the run queue's LISTEN connection was lost; connecting again", { error: String(error) });
      void endClient(client);
      setTimeout(() => void this.relisten(), RELISTEN_MS).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${CHANNEL}`);
    this.listener = client;
  }

  private async relisten(): Promise<void> {
    if (this.closed) return;
    try {
      await this.listen();
      // Announcements made while nobody listened: take whatever waits.
      this.ready();
    } catch (error) {
      this.logger.warn("the run queue could not LISTEN again; trying later", { error: String(error) });
      setTimeout(() => void this.relisten(), RELISTEN_MS).unref();
    }
  }
}
