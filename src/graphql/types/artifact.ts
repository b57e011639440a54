// Artifacts: files held by the artifact module.
import { ValidationError } from "../../domain/errors.js";
import type { Artifact } from "../../generated/prisma/client.js";
import { ArtifactRetention } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { newestFirst, ownedBy } from "./owned.js";

const ArtifactRetentionEnum = builder.enumType(ArtifactRetention, {
  name: "ArtifactRetention",
  description: "TEMPORARY artifacts expire; RETAINED ones are kept.",
});

export const ArtifactNode = builder.prismaNode("Artifact", {
  id: { field: "id" },
  nullable: true,
  findUnique: ownedBy,
  // The content is fetched only when asked for.
  select: { id: true },
  description: "A file produced by a run or a user.",
  fields: (t) => ({
    name: t.exposeString("name"),
    mimeType: t.exposeString("mimeType"),
    size: t.exposeInt("size", { description: "Bytes." }),
    retention: t.expose("retention", { type: ArtifactRetentionEnum }),
    expiresAt: t.expose("expiresAt", { type: "DateTime", nullable: true }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    content: t.string({
      description: "The content as UTF-8 text (fetched only when selected).",
      select: { content: true },
      resolve: (artifact) => artifact.content,
    }),
  }),
});

builder.queryField("artifacts", (t) =>
  t.prismaConnection(
    {
      type: "Artifact",
      description: "Your artifacts, newest first.",
      cursor: "id",
      defaultSize: 20,
      maxSize: 100,
      resolve: (query, _root, _args, ctx) =>
        ctx.prisma.artifact.findMany({ ...query, where: { ownerId: ctx.actor.principalId }, orderBy: newestFirst }),
    },
    { name: "ArtifactConnection" },
    { name: "ArtifactEdge" },
  ),
);

const CreateArtifactInput = builder.inputType("CreateArtifactInput", {
  fields: (t) => ({
    name: t.string({ required: true }),
    mimeType: t.string({ required: true, description: "e.g. text/html" }),
    content: t.string({ required: true, description: "UTF-8 text, up to 5 MiB." }),
  }),
});

const CreateArtifactSuccess = builder.objectRef<{ artifact: Artifact }>("CreateArtifactSuccess").implement({
  fields: (t) => ({ artifact: t.field({ type: ArtifactNode, resolve: (result) => result.artifact }) }),
});

builder.mutationField("createArtifact", (t) =>
  t.field({
    type: CreateArtifactSuccess,
    args: { input: t.arg({ type: CreateArtifactInput, required: true }) },
    errors: { types: [ValidationError], directResult: true, union: { name: "CreateArtifactPayload" } },
    resolve: async (_root, { input }, ctx) => ({ artifact: await ctx.services.artifacts.createArtifact(ctx.actor, input) }),
  }),
);
