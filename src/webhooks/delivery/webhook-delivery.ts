// One delivery attempt of a pending webhook message (issue 22), whoever schedules it (the
// in-process queue on the embedded default, pg-boss on PostgreSQL): the stored body, signed with
// every secret in force, POSTed through the outbound guard (the address actually connected to is
// checked; internal ones only for hosts in WEBHOOK_ALLOWED_HOSTS), redirects not followed, waiting
// at most WEBHOOK_TIMEOUT_MS (10 s unless configured) for the answer; then the attempt is recorded
// and the next one scheduled (domain/webhooks/webhook-attempts.ts).
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { Logger } from "../../logger.js";
import { type AttemptResult, recordAttempt } from "../../domain/webhooks/webhook-attempts.js";
import { webhookHeaders } from "../../domain/webhooks/webhook-signing.js";
import type { WebhookService } from "../../domain/webhooks/webhook-service.js";
import { connectionFailure, type OutboundHttp } from "../../outbound/outbound-http.js";

export const WEBHOOK_TIMEOUT_MS = 10_000;

const UNSIGNABLE: AttemptResult = {
  statusCode: null,
  durationMs: 0,
  error: "not sent: the signing secret cannot be opened with this server's SECRETS_KEY",
};

export type WebhookDeliveryDeps = {
  prisma: PrismaClient;
  webhooks: WebhookService;
  outbound: OutboundHttp;
  delaysSeconds: readonly number[];
  logger: Logger;
  timeoutMs?: number;
};

export class WebhookDelivery {
  constructor(private readonly deps: WebhookDeliveryDeps) {}

  /**
   * Makes the attempt `attempts + 1` of the message, if it is still pending at that attempt and
   * its webhook enabled; returns when the next attempt is due (null: none).
   */
  async deliver(messageId: string, attempts?: number): Promise<Date | null> {
    const { prisma } = this.deps;
    const message = await prisma.webhookMessage.findUnique({ where: { id: messageId }, include: { webhook: true } });
    if (message?.status !== "PENDING" || !message.webhook.enabled) return null;
    if (attempts !== undefined && message.attempts !== attempts) return null;
    const secrets = this.secretsOf(message.webhook);
    const result = secrets
      ? await this.send(message.webhook.ownerId, this.deps.webhooks.targetUrl(message.webhook), message.eventId, message.body, secrets)
      : UNSIGNABLE;
    const next = await prisma.$transaction((tx) => recordAttempt(tx, message, result, { delaysSeconds: this.deps.delaysSeconds }));
    this.deps.logger.debug("webhook attempt", { webhookId: message.webhookId, eventId: message.eventId, statusCode: result.statusCode, error: result.error });
    return next;
  }

  /** The secrets in force, or null when they cannot be opened (SECRETS_KEY missing or changed): nothing unsigned is sent. */
  private secretsOf(webhook: Parameters<WebhookService["signingSecrets"]>[0]): string[] | null {
    try {
      return this.deps.webhooks.signingSecrets(webhook);
    } catch (error) {
      this.deps.logger.error("a webhook's signing secret cannot be opened; is SECRETS_KEY the one it was created under?", { error: String(error) });
      return null;
    }
  }

  private async send(ownerId: string, url: string, eventId: string, body: string, secrets: string[]): Promise<AttemptResult> {
    const timeoutMs = this.deps.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
    const started = performance.now();
    const elapsed = () => performance.now() - started;
    try {
      const response = await this.deps.outbound.fetchFor(ownerId)(url, {
        method: "POST",
        headers: { "content-type": "application/json", "user-agent": "Dossier-Webhooks", ...webhookHeaders(secrets, eventId, body) },
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
      await response.body?.cancel().catch(() => undefined);
      const statusCode = response.status;
      if (statusCode >= 300 && statusCode < 400) return { statusCode, durationMs: elapsed(), error: `HTTP ${statusCode}: redirects are not followed` };
      return { statusCode, durationMs: elapsed(), error: statusCode >= 200 && statusCode < 300 ? null : `HTTP ${statusCode}` };
    } catch (error) {
      return { statusCode: null, durationMs: elapsed(), error: failure(error, timeoutMs) };
    }
  }
}

function failure(error: unknown, timeoutMs: number): string {
  const name = (error as { name?: string }).name;
  if (name === "TimeoutError" || name === "AbortError") return `no answer within ${timeoutMs / 1000} s`;
  if ((error as { code?: string }).code === "EINTERNALADDRESS") return (error as Error).message;
  return connectionFailure(error);
}
