// The calling principal and its API keys.
import { ValidationError } from "../../domain/errors.js";
import type { ApiKey } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";

export const PrincipalNode = builder.prismaNode("Principal", {
  id: { field: "id" },
  nullable: true,
  // A principal is visible only to itself.
  findUnique: (id, ctx) => ({ id, AND: [{ id: ctx.actor.principalId }] }),
  description: "Who a request acts for: the owner of API keys and of every object.",
  fields: (t) => ({
    name: t.exposeString("name"),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    apiKeys: t.relation("apiKeys", { description: "The principal's keys (never their secrets)." }),
  }),
});

export const ApiKeyNode = builder.prismaNode("ApiKey", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, principalId: ctx.actor.principalId }),
  fields: (t) => ({
    name: t.exposeString("name"),
    prefix: t.exposeString("prefix", { description: "The key's first characters, to tell keys apart." }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    revokedAt: t.expose("revokedAt", { type: "DateTime", nullable: true }),
  }),
});

builder.queryField("viewer", (t) =>
  t.prismaField({
    type: "Principal",
    description: "The principal this request acts for.",
    resolve: (query, _root, _args, ctx) => ctx.prisma.principal.findUniqueOrThrow({ ...query, where: { id: ctx.actor.principalId } }),
  }),
);

const CreateApiKeyInput = builder.inputType("CreateApiKeyInput", {
  fields: (t) => ({ name: t.string({ required: true, description: "A label for the key, e.g. the integration using it." }) }),
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
    description: "Gives the calling principal an additional API key.",
    args: { input: t.arg({ type: CreateApiKeyInput, required: true }) },
    errors: { types: [ValidationError], directResult: true, union: { name: "CreateApiKeyPayload" } },
    resolve: (_root, { input }, ctx) => ctx.services.principals.createApiKey(ctx.actor, input),
  }),
);
