// Webhook delivery of a process (issue 22): the attempts go out through the outbound guard
// (WEBHOOK_ALLOWED_HOSTS), scheduled by pg-boss on PostgreSQL and by an in-process queue on the
// embedded default; both start from the outbox rows, so whatever was pending resumes at start.
import type { DatabaseTimeouts } from "../db/bounded-waits.js";
import type { Database } from "../db/open-database.js";
import type { Services } from "../domain/services.js";
import { DEFAULT_RETRY_DELAYS_SECONDS } from "../domain/webhooks/webhook-attempts.js";
import type { EventBus } from "../events/topics.js";
import type { Logger } from "../logger.js";
import { keepListening } from "../events/keep-listening.js";
import { createOutboundHttp, type Resolver } from "../outbound/outbound-http.js";
import { InProcessWebhookQueue, type WebhookQueue } from "../webhooks/delivery/in-process-webhook-queue.js";
import { PgBossWebhookQueue } from "../webhooks/delivery/pg-boss-webhook-queue.js";
import { WebhookDelivery } from "../webhooks/delivery/webhook-delivery.js";

export type WebhookOptions = {
  /** Hosts webhooks may reach inside the network (WEBHOOK_ALLOWED_HOSTS, named exactly). */
  allowedHosts?: readonly string[];
  /** Seconds between attempts (WEBHOOK_RETRY_DELAYS_SECONDS); 5 s, 5 min, 30 min, 2 h, 5 h, 10 h by default. */
  retryDelaysSeconds?: readonly number[];
  /** This process delivers webhooks (the server does; tests that do not look at deliveries do not). */
  deliver?: boolean;
  /** PostgreSQL: schedule attempts through pg-boss at this database (the server passes its DATABASE_URL). */
  postgresUrl?: string;
  /** PostgreSQL: the bounds of the pg-boss connections' waits (DB_*_TIMEOUT_MS). */
  postgresTimeouts?: Partial<DatabaseTimeouts>;
  /** How often due attempts are looked for (and, on PostgreSQL, relayed into pg-boss). */
  pollMs?: number;
  /** Resolves webhook hosts (tests replace it). */
  resolve?: Resolver;
  /** How long an attempt waits for the endpoint's answer (WEBHOOK_TIMEOUT_MS): 10 s by default. */
  timeoutMs?: number;
};

export function startWebhookDelivery({
  db,
  events,
  services,
  logger,
  options,
}: {
  db: Database;
  events: EventBus;
  services: Services;
  logger: Logger;
  options: WebhookOptions;
}): {
  close(): Promise<void>;
} {
  const outbound = createOutboundHttp({ allowedHosts: options.allowedHosts ?? [], setting: "WEBHOOK_ALLOWED_HOSTS", resolve: options.resolve, logger });
  const delivery = new WebhookDelivery({
    prisma: db.prisma,
    webhooks: services.webhooks,
    outbound,
    delaysSeconds: options.retryDelaysSeconds ?? DEFAULT_RETRY_DELAYS_SECONDS,
    logger,
    timeoutMs: options.timeoutMs,
  });
  const base = { prisma: db.prisma, delivery, logger, pollMs: options.pollMs };
  const queue: WebhookQueue = options.postgresUrl
    ? new PgBossWebhookQueue({ ...base, url: options.postgresUrl, timeouts: options.postgresTimeouts, attemptTimeoutMs: options.timeoutMs })
    : new InProcessWebhookQueue(base);
  queue.start();
  // Committed events wake the queue at once (every instance, with Redis); the poll is the fallback.
  const wake = () => queue.wake();
  const pending = keepListening({
    what: "webhook events committed",
    subscribe: () => events.subscribe("webhook:pending"),
    onEvent: wake,
    onResumed: wake,
    logger,
  });
  return {
    async close() {
      await pending.stop();
      await queue.close();
      await outbound.close();
    },
  };
}
