// Webhooks per principal (issue 22): endpoints with the events they hear, their signing secrets
// sealed at rest with the secrets box (as MCP servers' values are), rotation with a 24-hour
// overlap, and redelivery of one event. Another principal's webhook is NotFound, as one that does
// not exist. Delivery itself is src/webhooks/delivery/.
import { z } from "zod";
import type { PrismaClient, Webhook } from "../../generated/prisma/client.js";
import { hostOf, literalAddressRefusal, portOf, namedExactly, internalAddressMessage } from "../capabilities/outbound-policy.js";
import type { SecretBox } from "../secret-box.js";
import { hasUserinfo, openUrl, sealUrl, shownUrl, userinfoRefusal } from "../sealed-url.js";
import { NotFoundError, ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { parseInput } from "../validation.js";
import { WEBHOOK_EVENT_TYPES } from "./webhook-events.js";
import { newSigningSecret } from "./webhook-signing.js";
import { lockPrincipalRow } from "../principal/principal-lock.js";

export const WEBHOOKS_PER_PRINCIPAL_MAX = 20;
/** How long the secret before a rotation keeps signing alongside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

const url = z
  .string()
  .trim()
  .max(2_000, "must be at most 2000 characters")
  .refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), "must be an http:// or https:// URL")
  // user:pass@ could never be delivered (Dossier sends no Basic auth) and would be stored in clear.
  .refine((value) => !hasUserinfo(value), userinfoRefusal("authenticate with the webhook's signing secret instead"));
const events = z.array(z.enum(WEBHOOK_EVENT_TYPES)).min(1, "must name at least one event type").max(WEBHOOK_EVENT_TYPES.length);
const description = z.string().trim().max(500, "must be at most 500 characters").nullish();

const createInput = z.object({ url, events, description });
const updateInput = z.object({ id: z.string(), url: url.nullish(), events: events.nullish(), description, enabled: z.boolean().nullish() });

export type CreateWebhookInput = z.input<typeof createInput>;
export type UpdateWebhookInput = z.input<typeof updateInput>;

export class WebhookService {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      /** Seals signing secrets; without it (PostgreSQL without SECRETS_KEY) no webhook can be created. */
      secrets?: SecretBox;
      /** Hosts webhooks may reach inside the network (WEBHOOK_ALLOWED_HOSTS); names are checked again when resolved. */
      allowedHosts: readonly string[];
      now?: () => Date;
    },
  ) {}

  /** Creates the endpoint; its signing secret is returned here and by rotations only. */
  async create(actor: Actor, input: CreateWebhookInput): Promise<{ webhook: Webhook; secret: string }> {
    const parsed = parseInput(createInput, input);
    this.refuseInternal(parsed.url);
    const box = this.box();
    const secret = newSigningSecret();
    const webhook = await this.deps.prisma.$transaction(async (tx) => {
      await lockPrincipalRow(tx, actor.principalId);
      if ((await tx.webhook.count({ where: { ownerId: actor.principalId } })) >= WEBHOOKS_PER_PRINCIPAL_MAX) {
        throw new ValidationError([{ field: "url", message: `at most ${WEBHOOKS_PER_PRINCIPAL_MAX} webhooks per principal` }]);
      }
      return tx.webhook.create({
        data: {
          ownerId: actor.principalId,
          url: sealUrl(parsed.url, box, "url"),
          events: [...new Set(parsed.events)],
          description: parsed.description ?? null,
          secret: box.seal(secret),
        },
      });
    });
    return { webhook, secret };
  }

  /** Changes what is given; `enabled: true` enables a disabled endpoint again (and clears why it was disabled). */
  async update(actor: Actor, input: UpdateWebhookInput): Promise<Webhook> {
    const parsed = parseInput(updateInput, input);
    if (parsed.url) this.refuseInternal(parsed.url);
    await this.owned(actor, parsed.id);
    // Enabled again: its pending deliveries are queued anew (on PostgreSQL, relayed to pg-boss again).
    if (parsed.enabled === true)
      await this.deps.prisma.webhookMessage.updateMany({ where: { webhookId: parsed.id, status: "PENDING" }, data: { relayedAt: null } });
    return this.deps.prisma.webhook.update({
      where: { id: parsed.id },
      data: {
        ...(parsed.url ? { url: sealUrl(parsed.url, this.deps.secrets, "url") } : {}),
        ...(parsed.events ? { events: [...new Set(parsed.events)] } : {}),
        ...(parsed.description !== undefined ? { description: parsed.description } : {}),
        ...(typeof parsed.enabled === "boolean" ? { enabled: parsed.enabled, disabledReason: parsed.enabled ? null : "disabled by its owner" } : {}),
      },
    });
  }

  /** Removes the endpoint with its pending deliveries and its attempts. */
  async delete(actor: Actor, id: string): Promise<Webhook> {
    const webhook = await this.owned(actor, id);
    await this.deps.prisma.webhook.deleteMany({ where: { id } });
    return webhook;
  }

  /** A new secret; the one it replaces keeps signing beside it for 24 hours (both signatures are sent). */
  async rotateSecret(actor: Actor, id: string): Promise<{ webhook: Webhook; secret: string }> {
    const box = this.box();
    const current = await this.owned(actor, id);
    const secret = newSigningSecret();
    const webhook = await this.deps.prisma.webhook.update({
      where: { id },
      data: { secret: box.seal(secret), previousSecret: current.secret, previousSecretExpiresAt: new Date(this.now().getTime() + ROTATION_OVERLAP_MS) },
    });
    return { webhook, secret };
  }

  /** Sends one event to the webhook again: a new series of attempts with the same event id. */
  async redeliver(actor: Actor, { webhookId, eventId }: { webhookId: string; eventId: string }): Promise<Webhook> {
    const webhook = await this.owned(actor, webhookId);
    if (!webhook.enabled) {
      throw new ValidationError([{ field: "webhookId", message: "the webhook is disabled; enable it with updateWebhook first" }]);
    }
    const reset = await this.deps.prisma.webhookMessage.updateMany({
      where: { webhookId, eventId },
      data: { status: "PENDING", attempts: 0, nextAttemptAt: this.now(), relayedAt: null },
    });
    if (reset.count === 0) throw new NotFoundError("WebhookEvent", eventId);
    return webhook;
  }

  /** The URL deliveries go to, opened (stored sealed, or in clear from before sealing existed). */
  targetUrl(webhook: Pick<Webhook, "url">): string {
    return openUrl(webhook.url, this.deps.secrets);
  }

  /** The URL as its owner is shown it: scheme, host and port, the rest redacted (domain/sealed-url.ts). */
  shownUrl(webhook: Pick<Webhook, "url">): string {
    return shownUrl(webhook.url, this.deps.secrets);
  }

  /** The secrets that sign now, newest first (opened). */
  signingSecrets(webhook: Pick<Webhook, "secret" | "previousSecret" | "previousSecretExpiresAt">, now = this.now()): string[] {
    const box = this.box();
    const previous = webhook.previousSecret && webhook.previousSecretExpiresAt && webhook.previousSecretExpiresAt > now ? [webhook.previousSecret] : [];
    return [webhook.secret, ...previous].map((sealed) => box.open(sealed));
  }

  private async owned(actor: Actor, id: string): Promise<Webhook> {
    const webhook = await this.deps.prisma.webhook.findFirst({ where: { id, ownerId: actor.principalId } });
    if (!webhook) throw new NotFoundError("Webhook", id);
    return webhook;
  }

  /** An address inside the network, as written (an IP literal or localhost), unless the operator named the host. */
  private refuseInternal(value: string): void {
    const target = new URL(value);
    const host = hostOf(target);
    const local = (host === "localhost" || host.endsWith(".localhost")) && !namedExactly(host, portOf(target), this.deps.allowedHosts);
    const refused = local
      ? internalAddressMessage(target.host, "WEBHOOK_ALLOWED_HOSTS")
      : literalAddressRefusal(target, this.deps.allowedHosts, "WEBHOOK_ALLOWED_HOSTS");
    if (refused) throw new ValidationError([{ field: "url", message: refused }]);
  }

  private box(): SecretBox {
    if (!this.deps.secrets) {
      throw new ValidationError([
        { field: "secret", message: "cannot be stored: this server has no SECRETS_KEY to encrypt signing secrets with (ask its operator to set one)" },
      ]);
    }
    return this.deps.secrets;
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }
}
