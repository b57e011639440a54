// The calling principal and its API keys.
import { ApiKeyLimitError, ForbiddenError, NotFoundError, ValidationError } from "../../domain/errors.js";
import type { AccessOperation } from "../../domain/principal/access-scope.js";
import { AccessOperationEnum } from "./access-token.js";
import type { ApiKey } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { boundedCount, countFields } from "../counted-connection.js";
import { requireIdOfType } from "../global-id.js";
import { describePage, LIST_PAGE, type KeysetList, readConnection, listConnection, paged } from "../list-connection.js";
import { me, myKeys } from "./owned.js";
import { RunCapsInput, RunCapsObject, runCapsOf } from "./run-caps.js";

const API_KEYS: KeysetList = {
  typename: "ApiKey",
  order: [
    ["createdAt", "asc"],
    ["id", "asc"],
  ],
  ...LIST_PAGE,
};

export const PrincipalNode = builder.prismaNode("Principal", {
  id: { field: "id" },
  nullable: true,
  // A principal is visible only to itself.
  findUnique: (id, ctx) => ({ id, AND: [me(ctx)] }),
  description: "Who a request acts for: the owner of API keys and of every object.",
  fields: (t) => ({
    name: t.exposeString("name"),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    apiKeys: listConnection(t, {
      type: "ApiKey",
      name: "PrincipalApiKeyConnection",
      description: describePage(
        "The principal's keys (never their secrets), oldest first, revoked ones included; the `apiKeys` query pages them newest first.",
        API_KEYS,
      ),
      list: API_KEYS,
      resolve: (query, principal, args, ctx) =>
        readConnection<ApiKey>(ctx.prisma.apiKey, API_KEYS, args, { scope: { AND: [myKeys(ctx), { principalId: principal.id }] }, query }),
    }),
  }),
});

export const ApiKeyNode = builder.prismaNode("ApiKey", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, AND: [myKeys(ctx)] }),
  fields: (t) => ({
    name: t.exposeString("name"),
    prefix: t.exposeString("prefix", { description: "The key's first characters, to tell keys apart." }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    lastUsedAt: t.expose("lastUsedAt", {
      type: "DateTime",
      nullable: true,
      description: "When a request last authenticated with the key, to the minute; null if it never did.",
    }),
    scopes: t.field({
      type: [AccessOperationEnum],
      description:
        "What the key may do: READ (queries), SUBSCRIBE, ADMIT (admitRun, steerRun), DECIDE (decideToolCall), CANCEL (cancelRun, pauseRun, resumeRun), SCORE (createScoreConfig, createScore, deleteScore).",
      resolve: (key) => key.scopes as AccessOperation[],
    }),
    revokedAt: t.expose("revokedAt", {
      type: "DateTime",
      nullable: true,
      description: "When the key was revoked: requests with it are refused and its subscriptions closed since.",
    }),
    runCaps: t.field({
      type: RunCapsObject,
      nullable: true,
      description: "The caps on the runs the key, and every key and access token it makes, may admit; null: none.",
      resolve: (key) => runCapsOf(key.runCaps),
    }),
  }),
});

builder.prismaObjectField("ApiKey", "createdBy", (t) =>
  t.field({
    type: ApiKeyNode,
    nullable: true,
    description:
      "The key that made this one with createApiKey: revoking that key withKeysItMinted revokes this one too. Null for a principal's first key, a key made without a key (a sign-in), one made before Dossier kept this, or one the calling key may not see.",
    resolve: async (key, _args, ctx) =>
      key.createdByKeyId ? await ctx.prisma.apiKey.findFirst({ where: { id: key.createdByKeyId, AND: [myKeys(ctx)] } }) : null,
  }),
);

builder.queryField("apiKeys", (t) =>
  t.prismaConnection(
    {
      type: "ApiKey",
      description: "Your API keys, newest first, revoked ones included (never their secrets).",
      cursor: "id",
      ...paged({ defaultSize: 20, maxSize: 100 }),
      resolve: (query, _root, _args, ctx) => ctx.prisma.apiKey.findMany({ ...query, where: myKeys(ctx), orderBy: [{ createdAt: "desc" }, { id: "desc" }] }),
    },
    { name: "ApiKeyConnection", fields: countFields<unknown>((_root, ctx) => boundedCount(ctx.prisma.apiKey, myKeys(ctx))) },
    { name: "ApiKeyEdge" },
  ),
);

builder.queryField("viewer", (t) =>
  t.prismaField({
    type: "Principal",
    description: "The principal this request acts for.",
    resolve: (query, _root, _args, ctx) => ctx.prisma.principal.findUniqueOrThrow({ ...query, where: me(ctx) }),
  }),
);

const CreateApiKeyInput = builder.inputType("CreateApiKeyInput", {
  fields: (t) => ({
    name: t.string({ required: true, description: "A label for the key, e.g. the integration using it." }),
    scopes: t.field({
      type: [AccessOperationEnum],
      description: "The operations the key may perform; default all of them, or all but DECIDE with `forAgent`. Never more than the calling key's.",
    }),
    forAgent: t.boolean({
      description: "The key is for an agent (such as Dossier's MCP server): by default it may not decide tool calls (DECIDE), which is a person's act.",
    }),
    runCaps: t.field({
      type: RunCapsInput,
      description: "Caps on the runs the key may admit; never wider than the calling key's, whose caps it inherits where these say nothing.",
    }),
  }),
});

const CreateApiKeySuccess = builder.objectRef<{ apiKey: ApiKey; secret: string }>("CreateApiKeySuccess").implement({
  fields: (t) => ({
    apiKey: t.field({ type: ApiKeyNode, resolve: (result) => result.apiKey }),
    secret: t.exposeString("secret", {
      description: "The key itself, for `Authorization: Bearer <secret>`. Shown only here, only once.",
    }),
  }),
});

builder.mutationField("createApiKey", (t) =>
  t.field({
    type: CreateApiKeySuccess,
    description:
      "Gives the calling principal an additional API key. An ApiKeyLimitError says it already has as many live keys as one principal may (revoke one first); a ForbiddenError, that the calling key was revoked meanwhile. The new key records the calling key (createdBy), and is revoked with it.",
    args: { input: t.arg({ type: CreateApiKeyInput, required: true }) },
    errors: { types: [ValidationError, ApiKeyLimitError, ForbiddenError], directResult: true, union: { name: "CreateApiKeyPayload" } },
    resolve: (_root, { input }, ctx) => ctx.services.principals.createApiKey(ctx.actor, input),
  }),
);

const RevokeApiKeyInput = builder.inputType("RevokeApiKeyInput", {
  fields: (t) => ({
    id: t.id({ required: true, description: "The key's id (from `apiKeys`)." }),
    withKeysItMinted: t.boolean({
      description:
        "Also revoke every live key this one made (createApiKey with it; ApiKey.createdBy), and every key those made: for a key that leaked, whose holder may have minted keys of their own. False by default, so a key rotated the usual way (a replacement made with the old key, then the old key revoked) leaves its replacement working.",
    }),
  }),
});

const RevokeApiKeySuccess = builder.objectRef<{ apiKey: ApiKey }>("RevokeApiKeySuccess").implement({
  fields: (t) => ({ apiKey: t.field({ type: ApiKeyNode, resolve: (result) => result.apiKey }) }),
});

builder.mutationField("revokeApiKey", (t) =>
  t.field({
    type: RevokeApiKeySuccess,
    description:
      'Revokes one of your keys, the one in use included: requests with it are refused at once, and subscriptions opened with it are closed within seconds (a WebSocket with code 4403, reason "API key revoked"; an SSE stream after an UNAUTHENTICATED error), and the schedules it created, last updated or resumed pause (pausedReason, webhook SCHEDULE_PAUSED). With `withKeysItMinted`, every key it made (createApiKey with it), and every key those made, is revoked with it, in the same way. Revoking a revoked key returns it unchanged.',
    args: { input: t.arg({ type: RevokeApiKeyInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "RevokeApiKeyPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      apiKey: await ctx.services.principals.revokeApiKey(ctx.actor, requireIdOfType(String(input.id), "ApiKey", "id"), {
        withKeysItMinted: input.withKeysItMinted ?? false,
      }),
    }),
  }),
);
