// What one delivery attempt changes (issue 22): a 2xx within the timeout delivers the event; any
// other answer, a redirect (never followed), a timeout or a failed connection is retried after the
// next delay of the schedule (5 s, 5 min, 30 min, 2 h, 5 h, 10 h by default, WEBHOOK_RETRY_DELAYS_SECONDS);
// when the last retry failed too, the event is FAILED and the endpoint is disabled with the reason.
// Recorded in one transaction, conditional on the message still being at this attempt: two
// deliverers of one attempt (a redelivered queue job) record it once.
import type { Prisma } from "../../generated/prisma/client.js";

export const DEFAULT_RETRY_DELAYS_SECONDS = [5, 300, 1_800, 7_200, 18_000, 36_000] as const;

/** What the endpoint answered: its status code (null: no answer), how long it took, what went wrong. */
export type AttemptResult = { statusCode: number | null; durationMs: number; error: string | null };

export const delivered = (result: AttemptResult): boolean =>
  result.error === null && result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;

export type PendingMessage = { id: string; webhookId: string; eventId: string; attempts: number };

/** Records the attempt; returns when the next one is due (null: delivered, failed for good, or already recorded). */
export async function recordAttempt(
  tx: Prisma.TransactionClient,
  message: PendingMessage,
  result: AttemptResult,
  { delaysSeconds, now = new Date() }: { delaysSeconds: readonly number[]; now?: Date },
): Promise<Date | null> {
  const number = message.attempts + 1;
  const ok = delivered(result);
  const delay = ok ? undefined : delaysSeconds[number - 1];
  const next = delay === undefined ? null : new Date(now.getTime() + delay * 1000);
  const status = ok ? "SUCCEEDED" : next ? "PENDING" : "FAILED";
  const moved = await tx.webhookMessage.updateMany({
    where: { id: message.id, status: "PENDING", attempts: message.attempts },
    data: { status, attempts: number, nextAttemptAt: next, relayedAt: null },
  });
  if (moved.count === 0) return null;
  await tx.webhookAttempt.create({
    data: {
      webhookId: message.webhookId,
      messageId: message.id,
      eventId: message.eventId,
      number,
      statusCode: result.statusCode,
      durationMs: Math.round(result.durationMs),
      error: result.error,
      nextRetryAt: next,
      createdAt: now,
    },
  });
  if (status === "FAILED") {
    await tx.webhook.update({
      where: { id: message.webhookId },
      data: {
        enabled: false,
        disabledReason: `every attempt to deliver event ${message.eventId} failed (${number} attempts; the last: ${result.error ?? `HTTP ${result.statusCode}`})`,
      },
    });
  }
  return next;
}
