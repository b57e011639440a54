// Webhook deliveries on PostgreSQL (issue 22) through pg-boss, from the outbox. An event is
// written as webhook_message rows in the transaction of the change it reports (the outbox), not
// sent to pg-boss there: the domain's transactions are Prisma's, and an outbox keeps them free of
// the queue. A relay in every server moves each pending attempt that is not yet queued into
// pg-boss as a job that starts when the attempt is due, then marks it relayed. A crash between
// the two queues it again on the next pass, and the job's singleton key (message and attempt)
// keeps that from adding a second job while the first waits; a stale job finds its message at
// another attempt and does nothing. The servers' pg-boss workers take the jobs; a job whose
// process died mid-attempt expires (10 s after the attempt's timeout, EXPIRY_MARGIN_MS) and is retried by pg-boss. Recording an attempt clears `relayed_at`,
// so a retry is relayed the same way, with its delay as the job's start. A job that pg-boss gave
// up on (failed for good: its retries spent, say while the database refused the attempt's record)
// or that is gone without the attempt being recorded leaves its message PENDING and relayed: the
// relay finds it — relayed a while ago, no live job for its attempt — and relays it again, so the
// event is still delivered, at least once.
// Jobs are fetched by priority: a job's is minus its owner's attempts queued before it, so the
// workers take each principal's next attempt in turn (issue 36) instead of one principal's backlog first.
import type PgBoss from "pg-boss";
import type { DatabaseTimeouts } from "../../db/bounded-waits.js";
import { underSetupLock } from "../../db/pg-boss-setup.js";
import { type PreparedPool, preparedPool } from "../../db/prepared-pool.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { Logger } from "../../logger.js";
import type { WebhookQueue } from "./in-process-webhook-queue.js";
import { WEBHOOK_TIMEOUT_MS, type WebhookDelivery } from "./webhook-delivery.js";

const QUEUE = "dossier-webhook-attempt";
/** How many attempts one server makes at a time, each refilled as it ends. */
const PLACES = 4;

/**
 * How long past its attempt's timeout a job may stay active before pg-boss takes its process for
 * dead: a message read and a recording transaction take milliseconds on a working database, so 10 s
 * is room for a slow one (a database that stalls longer than that fails the attempt's statements
 * only after DB_STATEMENT_TIMEOUT_MS, which no expiry short enough to recover from a crash covers).
 */
export const EXPIRY_MARGIN_MS = 10_000;

/**
 * The next 100 messages to relay, by turn: each message's turn among its owner's is those of the
 * owner already queued (counted up to 200 per webhook, two relays' worth), then its place among
 * the waiting. Each webhook's next 100 waiting messages only are read, in their order from its
 * index (ordered by relayed_at too, all null, so that the index with it gives the order): a
 * relay's cost grows with the webhooks, not with a principal's backlog.
 */
export const WAITING_MESSAGES = `WITH queued AS (
         SELECT w.owner_id, sum(q.n)::int AS n FROM webhook w CROSS JOIN LATERAL (
           SELECT count(*)::int AS n FROM (
             SELECT 1 FROM webhook_message m
              WHERE m.webhook_id = w.id AND m.status = 'PENDING' AND m.relayed_at >= '-infinity' LIMIT 200) AS relayed) AS q
          GROUP BY w.owner_id),
       waiting AS (
         SELECT d.id, d.attempts, d.next_attempt_at, w.owner_id FROM webhook w CROSS JOIN LATERAL (
           SELECT m.id, m.attempts, m.next_attempt_at FROM webhook_message m
            WHERE m.webhook_id = w.id AND m.status = 'PENDING' AND m.relayed_at IS NULL
            ORDER BY m.relayed_at, m.next_attempt_at, m.id LIMIT 100) AS d
          WHERE w.enabled)
       SELECT waiting.id, waiting.attempts, waiting.next_attempt_at AS "nextAttemptAt",
              (COALESCE(queued.n, 0) + row_number() OVER (PARTITION BY waiting.owner_id ORDER BY waiting.next_attempt_at, waiting.id))::int AS turn
         FROM waiting LEFT JOIN queued ON queued.owner_id = waiting.owner_id
        ORDER BY turn, waiting.next_attempt_at, waiting.id LIMIT 100`;

type Job = { messageId: string; attempts: number };

export type PgBossWebhookQueueDeps = {
  url: string;
  /** The bounds of its connections' waits (DB_*_TIMEOUT_MS), as the main pool's. */
  timeouts?: Partial<DatabaseTimeouts>;
  prisma: PrismaClient;
  delivery: WebhookDelivery;
  logger: Logger;
  pollMs?: number;
  /** How long an attempt waits for the endpoint (WEBHOOK_TIMEOUT_MS): its job expires EXPIRY_MARGIN_MS after that. */
  attemptTimeoutMs?: number;
  /** How often pg-boss retries a job whose attempt threw before it gives up on it (default 5); the relay then relays it again. */
  retryLimit?: number;
  /** How long after relaying a message without a live job it is relayed again (default 10 s). */
  relayAgainAfterMs?: number;
};

export class PgBossWebhookQueue implements WebhookQueue {
  /** Made when the queue opens: pg-boss is loaded only by a server that delivers webhooks through it. */
  private boss!: PgBoss;
  private db: PreparedPool | undefined;
  private started: Promise<boolean> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private relaying: Promise<void> | undefined;
  private closed = false;
  private again = false;
  private readonly workerIds: string[] = [];
  /** Set once the queue exists: pg-boss silently drops a job sent to a queue it has not created yet. */
  private ready = false;

  constructor(private readonly deps: PgBossWebhookQueueDeps) {}

  /** Connects (creating the queue when missing), works the queue's jobs and relays the outbox every pollMs. */
  start(): void {
    this.started = this.open().then(
      () => true,
      (error: unknown) => {
        this.deps.logger.error("the webhook queue did not start; webhooks are not delivered by this process", { error: String(error) });
        return false;
      },
    );
  }

  private async open(): Promise<void> {
    const [{ default: PgBoss }, { default: pg }] = await Promise.all([import("pg-boss"), import("pg")]);
    const deps = this.deps;
    const reportError = (error: Error) => deps.logger.error("the webhook queue reported an error", { error: String(error) });
    // pg-boss's statements are prepared once per connection (prepared-pool.ts).
    this.db = preparedPool(pg, { connectionString: deps.url, max: 2, application_name: "dossier-webhooks" }, reportError, deps.timeouts);
    // Jobs of a process that died mid-attempt expire (expireInSeconds) and are retried by maintenance.
    // Its Db type says rows always come back; after close none do, as with its own pool (prepared-pool.ts).
    this.boss = new PgBoss({ db: this.db as unknown as PgBoss.Db, schema: "pgboss", schedule: false, maintenanceIntervalSeconds: 5 });
    this.boss.on("error", reportError);
    // One process at a time (pg-boss-setup.ts): processes started together would deadlock creating queues.
    await underSetupLock(pg.Client, { url: deps.url, timeouts: deps.timeouts, applicationName: "dossier-webhooks-setup" }, async () => {
      await this.boss.start();
      // The queue's default expiry; each job is sent with its own (expireInSeconds), from this server's attempt timeout.
      await this.boss.createQueue(QUEUE, {
        name: QUEUE,
        policy: "short",
        retryLimit: deps.retryLimit ?? 5,
        retryDelay: 1,
        expireInSeconds: 20,
        retentionMinutes: 60,
      });
    });
    if (this.closed) return;
    // PLACES workers of one job each: a place is refilled as soon as its attempt ends, whatever the
    // others wait for. (A batch of jobs would hold all of them until its slowest attempt ends: one
    // endpoint that never answers, its job in nearly every batch, would cap every principal.)
    for (let place = 0; place < PLACES && !this.closed; place += 1) {
      const workerId = await this.boss.work<Job>(QUEUE, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async ([job]) => {
        if (job) await this.deps.delivery.deliver(job.data.messageId, job.data.attempts);
      });
      this.workerIds.push(workerId);
    }
    this.ready = true;
    this.timer = setInterval(() => this.wake(), this.deps.pollMs ?? 1_000);
    this.timer.unref();
    this.wake();
  }

  /** Relays what waits in the outbox now. */
  wake(): void {
    // Before the queue exists nothing is relayed: open() relays once it does.
    if (this.closed || !this.ready) return;
    // Woken while busy: once more when done, so that nothing committed meanwhile waits for the poll.
    if (this.relaying) {
      this.again = true;
      return;
    }
    this.again = false;
    this.relaying = this.relay()
      .catch((error: unknown) => this.deps.logger.warn("webhook deliveries could not be queued", { error: String(error) }))
      .finally(() => {
        this.relaying = undefined;
        if (this.again) this.wake();
      });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    const started = await this.started;
    await this.relaying;
    if (started) await this.boss.stop({ graceful: true, wait: true, timeout: 2_000 });
    await this.db?.close();
  }
  private async relay(): Promise<void> {
    await this.relayLost();
    // Each message's turn among its owner's: those already queued, then its place among the waiting.
    // A pass moves the lowest turns first, whoever owns them: one principal's backlog of thousands
    // never holds another principal's next event back for more than one pass.
    const waiting = await this.deps.prisma.$queryRawUnsafe<{ id: string; attempts: number; nextAttemptAt: Date | null; turn: number }[]>(WAITING_MESSAGES);
    for (const message of waiting) {
      const startAfter = message.nextAttemptAt && message.nextAttemptAt > new Date() ? message.nextAttemptAt : undefined;
      await this.boss.send(QUEUE, { messageId: message.id, attempts: message.attempts } satisfies Job, {
        singletonKey: `${message.id}:${message.attempts}`,
        priority: -message.turn,
        expireInSeconds: this.expireInSeconds(),
        ...(startAfter ? { startAfter } : {}),
      });
      await this.deps.prisma.webhookMessage.updateMany({
        where: { id: message.id, attempts: message.attempts, relayedAt: null },
        data: { relayedAt: new Date() },
      });
    }
    // This process's workers fetch at once instead of at their next poll; the other processes' poll.
    if (waiting.length > 0) for (const workerId of this.workerIds) this.boss.notifyWorker(workerId);
  }

  /**
   * An attempt waits at most its timeout for the endpoint; around that it reads its message and
   * records itself in a transaction, in a job of its own. A job still active EXPIRY_MARGIN_MS after
   * its timeout belongs to a process that is gone (20 s with the default 10 s timeout, 11 s with the
   * smallest, 500 ms). The margin is fixed, not a multiple
   * of the timeout: a job that expires while its attempt still runs is retried at the same attempt,
   * and the endpoint gets the event twice.
   */
  private expireInSeconds(): number {
    return Math.ceil(((this.deps.attemptTimeoutMs ?? WEBHOOK_TIMEOUT_MS) + EXPIRY_MARGIN_MS) / 1000);
  }

  /**
   * Marks unrelayed again the pending messages whose job for their current attempt is no longer
   * waiting, retrying or running (failed for good, or gone) although it was relayed a while ago:
   * the attempt was never recorded, so it is relayed again below.
   */
  private async relayLost(): Promise<void> {
    const lost = await this.deps.prisma.$executeRawUnsafe(
      `UPDATE webhook_message m SET relayed_at = NULL
        WHERE m.status = 'PENDING' AND m.relayed_at < now() - make_interval(secs => $2::double precision / 1000)
          AND NOT EXISTS (SELECT 1 FROM pgboss.job j
                           WHERE j.name = $1 AND j.singleton_key = m.id || ':' || m.attempts
                             AND j.state IN ('created', 'retry', 'active'))`,
      QUEUE,
      this.deps.relayAgainAfterMs ?? 10_000,
    );
    if (lost > 0) this.deps.logger.warn("webhook attempts whose queue job failed for good are relayed again", { count: lost });
  }
}
