// Webhooks (issue 22): each principal's endpoints, signed per Standard Webhooks, with every
// delivery attempt readable. Another principal's webhook is not found, as one that does not exist.
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import { REDACTION_RULE } from "../../domain/sealed-url.js";
import type { Webhook, WebhookAttempt } from "../../generated/prisma/client.js";
import { WebhookEventType } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { encodeGlobalId, requireIdOfType } from "../global-id.js";
import { describePage, LIST_PAGE, type KeysetList, readConnection, listConnection } from "../list-connection.js";
import { mine, ownedBy } from "./owned.js";

const WEBHOOKS: KeysetList = {
  typename: "Webhook",
  order: [
    ["createdAt", "desc"],
    ["id", "desc"],
  ],
  ...LIST_PAGE,
};
const DELIVERIES: KeysetList = { ...WEBHOOKS, typename: "WebhookDelivery" };

const WebhookEventTypeEnum = builder.enumType(WebhookEventType, {
  name: "WebhookEventType",
  description:
    "What a webhook hears, always about objects its principal owns: a run that succeeded, failed, was cancelled, reached its deadline or waits for a tool-call decision; a checkpoint revision; a publication version; a workspace archived or deleted; a score created (SCORE_CREATED: data holds scoreId, targetId, targetType, configName, value, label, source); a schedule that paused itself after consecutive failed runs, or because the API key that created, last updated or resumed it was revoked (SCHEDULE_PAUSED: data holds scheduleId, workspaceId, runId — the last failed run, null for a revoked key — and the reason as summary).",
});

const WebhookDeliveryRef = builder.objectRef<WebhookAttempt>("WebhookDelivery").implement({
  description: "One attempt to deliver an event to the endpoint.",
  fields: (t) => ({
    id: t.id({ description: "Names the attempt as `after` in `Webhook.deliveries`.", resolve: (attempt) => encodeGlobalId("WebhookDelivery", attempt.id) }),
    eventId: t.exposeString("eventId", { description: "The event's id, the `webhook-id` header: the same on every attempt and redelivery of the event." }),
    attempt: t.exposeInt("number", { description: "1 for the first attempt of a delivery or a redelivery, then 2, 3, …" }),
    statusCode: t.exposeInt("statusCode", { nullable: true, description: "The endpoint's HTTP status; null when it did not answer." }),
    durationMs: t.exposeInt("durationMs"),
    error: t.exposeString("error", { nullable: true, description: "Why the attempt did not deliver the event; null when it did (a 2xx within 10 s)." }),
    nextRetryAt: t.expose("nextRetryAt", { type: "DateTime", nullable: true, description: "When the next attempt is due; null when none is." }),
    attemptedAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

export const WebhookNode = builder.prismaNode("Webhook", {
  id: { field: "id" },
  nullable: true,
  findUnique: ownedBy,
  description: "An endpoint your events are POSTed to, signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature).",
  fields: (t) => ({
    url: t.string({
      description: `Where events are POSTed. ${REDACTION_RULE}`,
      resolve: (webhook, _args, ctx) => ctx.services.webhooks.shownUrl(webhook),
    }),
    description: t.exposeString("description", { nullable: true }),
    events: t.field({ type: [WebhookEventTypeEnum], resolve: (webhook) => webhook.events }),
    enabled: t.exposeBoolean("enabled", {
      description:
        "False once every attempt of a delivery failed (see disabledReason), or when you disabled it. A disabled endpoint is sent nothing, and events that happen meanwhile are not kept for it; enabled again, its deliveries still pending resume.",
    }),
    disabledReason: t.exposeString("disabledReason", { nullable: true }),
    previousSecretExpiresAt: t.expose("previousSecretExpiresAt", {
      type: "DateTime",
      nullable: true,
      description: "Until when the secret before the last rotation still signs beside the new one.",
    }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    updatedAt: t.expose("updatedAt", { type: "DateTime" }),
    deliveries: listConnection(t, {
      type: WebhookDeliveryRef,
      name: "WebhookDeliveryConnection",
      description: describePage("Delivery attempts, newest first.", DELIVERIES),
      list: DELIVERIES,
      resolve: (_query, webhook, args, ctx) =>
        readConnection<WebhookAttempt>(ctx.prisma.webhookAttempt, DELIVERIES, args, { scope: { webhookId: webhook.id } }),
    }),
  }),
});

builder.queryField("webhooks", (t) =>
  listConnection(t, {
    type: "Webhook",
    name: "WebhookConnection",
    description: describePage("Your webhooks, newest first.", WEBHOOKS),
    list: WEBHOOKS,
    resolve: (query, _root, args, ctx) => readConnection<Webhook>(ctx.prisma.webhook, WEBHOOKS, args, { scope: mine(ctx), query }),
  }),
);

const urlDescription =
  "Where events are POSTed (http or https), stored encrypted (read back redacted: see Webhook.url); a path or query (a token in it) needs the server's SECRETS_KEY. It must lead outside the server's network unless the operator lists its host in WEBHOOK_ALLOWED_HOSTS: an address inside it is a ValidationError at once, a name resolving inside it a failed delivery.";

const CreateWebhookInput = builder.inputType("CreateWebhookInput", {
  fields: (t) => ({
    url: t.string({ required: true, description: urlDescription }),
    events: t.field({ type: [WebhookEventTypeEnum], required: true }),
    description: t.string(),
  }),
});

const withSecret = (name: string) =>
  builder.objectRef<{ webhook: Webhook; secret: string }>(name).implement({
    fields: (t) => ({
      webhook: t.field({ type: WebhookNode, resolve: (result) => result.webhook }),
      secret: t.exposeString("secret", {
        description: "The signing secret, `whsec_<base64>`, shown this once: verify deliveries with it (standardwebhooks, or the SDK's verifyWebhook).",
      }),
    }),
  });
const CreateWebhookSuccess = withSecret("CreateWebhookSuccess");
const RotateWebhookSecretSuccess = withSecret("RotateWebhookSecretSuccess");

builder.mutationField("createWebhook", (t) =>
  t.field({
    type: CreateWebhookSuccess,
    description: "Creates an endpoint for the events named; returns it with its signing secret, once.",
    args: { input: t.arg({ type: CreateWebhookInput, required: true }) },
    errors: { types: [ValidationError], directResult: true, union: { name: "CreateWebhookPayload" } },
    resolve: (_root, { input }, ctx) => ctx.services.webhooks.create(ctx.actor, { url: input.url, events: input.events, description: input.description }),
  }),
);

const UpdateWebhookInput = builder.inputType("UpdateWebhookInput", {
  description: "What to change; fields left out keep their value.",
  fields: (t) => ({
    id: t.id({ required: true }),
    url: t.string({ description: urlDescription }),
    events: t.field({ type: [WebhookEventTypeEnum] }),
    description: t.string(),
    enabled: t.boolean({ description: "true enables a disabled endpoint again; its pending deliveries resume." }),
  }),
});

const withWebhook = (name: string) =>
  builder.objectRef<{ webhook: Webhook }>(name).implement({
    fields: (t) => ({ webhook: t.field({ type: WebhookNode, resolve: (result) => result.webhook }) }),
  });
const UpdateWebhookSuccess = withWebhook("UpdateWebhookSuccess");
const RedeliverWebhookEventSuccess = withWebhook("RedeliverWebhookEventSuccess");

const webhookId = (id: string | number, field = "id") => requireIdOfType(String(id), "Webhook", field);

builder.mutationField("updateWebhook", (t) =>
  t.field({
    type: UpdateWebhookSuccess,
    args: { input: t.arg({ type: UpdateWebhookInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "UpdateWebhookPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      webhook: await ctx.services.webhooks.update(ctx.actor, { ...input, id: webhookId(input.id), url: input.url ?? undefined }),
    }),
  }),
);

const WebhookIdInput = builder.inputType("WebhookIdInput", { fields: (t) => ({ id: t.id({ required: true }) }) });

const DeleteWebhookSuccess = builder.objectRef<{ deletedId: string }>("DeleteWebhookSuccess").implement({
  fields: (t) => ({ deletedId: t.id({ resolve: (result) => encodeGlobalId("Webhook", result.deletedId) }) }),
});

builder.mutationField("deleteWebhook", (t) =>
  t.field({
    type: DeleteWebhookSuccess,
    description: "Removes the endpoint, its pending deliveries and its attempts.",
    args: { input: t.arg({ type: WebhookIdInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "DeleteWebhookPayload" } },
    resolve: async (_root, { input }, ctx) => ({ deletedId: (await ctx.services.webhooks.delete(ctx.actor, webhookId(input.id))).id }),
  }),
);

builder.mutationField("rotateWebhookSecret", (t) =>
  t.field({
    type: RotateWebhookSecretSuccess,
    description:
      "A new signing secret, returned once. The previous one keeps signing for 24 hours beside it: `webhook-signature` then carries both `v1,` signatures, so receivers can switch without losing an event.",
    args: { input: t.arg({ type: WebhookIdInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "RotateWebhookSecretPayload" } },
    resolve: (_root, { input }, ctx) => ctx.services.webhooks.rotateSecret(ctx.actor, webhookId(input.id)),
  }),
);

const RedeliverWebhookEventInput = builder.inputType("RedeliverWebhookEventInput", {
  fields: (t) => ({
    webhookId: t.id({ required: true }),
    eventId: t.string({ required: true, description: "The event's id (WebhookDelivery.eventId, the webhook-id header)." }),
  }),
});

builder.mutationField("redeliverWebhookEvent", (t) =>
  t.field({
    type: RedeliverWebhookEventSuccess,
    description: "Sends one event to the endpoint again, with the same event id, as a new series of attempts.",
    args: { input: t.arg({ type: RedeliverWebhookEventInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "RedeliverWebhookEventPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      webhook: await ctx.services.webhooks.redeliver(ctx.actor, { webhookId: webhookId(input.webhookId, "webhookId"), eventId: input.eventId }),
    }),
  }),
);
