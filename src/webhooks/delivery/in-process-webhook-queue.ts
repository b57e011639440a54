// Webhook deliveries on the embedded default (issue 22): a queue in this one process over the
// outbox rows. Every `pollMs` (and when woken) it makes the attempts that are due, a few at a
// time; the rows say what is due, so after a restart — a crash included — pending deliveries
// resume where they were, and retries keep their schedule. Due attempts are taken fairly across
// principals (issue 36): each owner's next attempt in turn, an owner's attempts in flight counting
// as turns taken, so one principal's slow endpoints never hold every place while another's wait.
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { Logger } from "../../logger.js";
import type { WebhookDelivery } from "./webhook-delivery.js";

export type WebhookQueue = { start(): void; wake(): void; close(): Promise<void> };

/**
 * The next due attempts ($2 of them), not in flight ($1): each enabled webhook's next few due
 * messages only, read in their order from its index, then ranked per owner — a poll's cost grows
 * with the webhooks and the room it fills, not with a principal's backlog of due messages.
 */
export const DUE_MESSAGES = `WITH busy AS (
         SELECT w.owner_id, count(*)::int AS n FROM webhook_message m JOIN webhook w ON w.id = m.webhook_id
          WHERE m.id = ANY($1::text[]) GROUP BY w.owner_id),
       due AS (
         SELECT d.id, d.attempts, d.next_attempt_at, w.owner_id,
                row_number() OVER (PARTITION BY w.owner_id ORDER BY d.next_attempt_at, d.id) AS turn
           FROM webhook w CROSS JOIN LATERAL (
             SELECT m.id, m.attempts, m.next_attempt_at FROM webhook_message m
              WHERE m.webhook_id = w.id AND m.status = 'PENDING' AND m.next_attempt_at <= now() AND m.id <> ALL($1::text[])
              ORDER BY m.next_attempt_at, m.id LIMIT $2::int) AS d
          WHERE w.enabled)
       SELECT due.id, due.attempts FROM due LEFT JOIN busy ON busy.owner_id = due.owner_id
        ORDER BY due.turn + COALESCE(busy.n, 0), due.next_attempt_at, due.id LIMIT $2::int`;

export class InProcessWebhookQueue implements WebhookQueue {
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private polling: Promise<void> | undefined;
  private closed = false;
  private again = false;

  constructor(private readonly deps: { prisma: PrismaClient; delivery: WebhookDelivery; logger: Logger; pollMs?: number; concurrency?: number }) {}

  start(): void {
    this.timer = setInterval(() => this.wake(), this.deps.pollMs ?? 1_000);
    this.timer.unref();
    this.wake();
  }

  wake(): void {
    if (this.closed) return;
    // Woken while busy: once more when done, so that nothing committed meanwhile waits for the poll.
    if (this.polling) {
      this.again = true;
      return;
    }
    this.again = false;
    this.polling = this.poll()
      .catch((error: unknown) => this.deps.logger.warn("webhook deliveries could not be read", { error: String(error) }))
      .finally(() => {
        this.polling = undefined;
        if (this.again) this.wake();
      });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.polling;
    await Promise.allSettled(this.inFlight.values());
  }

  private async poll(): Promise<void> {
    const room = (this.deps.concurrency ?? 8) - this.inFlight.size;
    if (room <= 0) return;
    const due = await this.deps.prisma.$queryRawUnsafe<{ id: string; attempts: number }[]>(DUE_MESSAGES, [...this.inFlight.keys()], room);
    for (const { id, attempts } of due) {
      const attempt = this.deps.delivery
        .deliver(id, attempts)
        .catch((error: unknown) => this.deps.logger.warn("a webhook attempt failed to run", { messageId: id, error: String(error) }))
        .finally(() => this.inFlight.delete(id));
      this.inFlight.set(id, attempt);
    }
  }
}
