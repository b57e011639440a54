// Artifacts: files held by the artifact module.
import { paged } from "../list-connection.js";
import { ArtifactExpiredError, ArtifactStorageLimitError, ValidationError } from "../../domain/errors.js";
import type { Artifact } from "../../generated/prisma/client.js";
import { ArtifactRetention } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { ARTIFACT_MAX_BYTES } from "../../domain/research/artifact-service.js";
import { largeText } from "../large-text.js";
import { boundedCount, countFields } from "../counted-connection.js";
import { mine, newestFirst, ownedBy } from "./owned.js";

const ArtifactRetentionEnum = builder.enumType(ArtifactRetention, {
  name: "ArtifactRetention",
  description: "TEMPORARY artifacts expire at expiresAt: their content is then no longer served, and a sweeper frees it; RETAINED ones are kept.",
});

const ArtifactContentRef = builder.objectRef<{ text: string }>("ArtifactContent").implement({
  description: "An artifact's content, while it is kept.",
  fields: (t) => ({ text: t.exposeString("text", { extensions: largeText(ARTIFACT_MAX_BYTES), description: "The content as UTF-8 text." }) }),
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
    // Making `content` a union would break every client that selects it as a string, so it
    // stays a string, null once expired, and `contentResult` carries the typed error.
    content: t.string({
      nullable: true,
      extensions: largeText(ARTIFACT_MAX_BYTES),
      description:
        "The content as UTF-8 text (fetched only when selected). Null once a TEMPORARY artifact is past expiresAt; contentResult then answers ArtifactExpiredError. (It stays a string rather than becoming a union, so clients that select it keep working.)",
      select: { content: true, retention: true, expiresAt: true },
      resolve: (artifact, _args, ctx) => {
        try {
          return ctx.services.artifacts.contentOf(artifact);
        } catch (error) {
          if (error instanceof ArtifactExpiredError) return null;
          throw error;
        }
      },
    }),
    contentResult: t.field({
      type: ArtifactContentRef,
      description:
        "The content, or ArtifactExpiredError once a TEMPORARY artifact is past expiresAt. The expiry sweeper then empties the stored content; the artifact itself stays, so its name, mimeType, size, createdAt and expiresAt keep reading.",
      select: { content: true, retention: true, expiresAt: true },
      errors: { types: [ArtifactExpiredError], directResult: true, union: { name: "ArtifactContentResult" } },
      resolve: (artifact, _args, ctx) => ({ text: ctx.services.artifacts.contentOf(artifact) }),
    }),
  }),
});

builder.queryField("artifacts", (t) =>
  t.prismaConnection(
    {
      type: "Artifact",
      description: "Your artifacts, newest first.",
      cursor: "id",
      ...paged({ defaultSize: 20, maxSize: 100 }),
      resolve: (query, _root, _args, ctx) => ctx.prisma.artifact.findMany({ ...query, where: mine(ctx), orderBy: newestFirst }),
    },
    { name: "ArtifactConnection", fields: countFields<unknown>((_root, ctx) => boundedCount(ctx.prisma.artifact, mine(ctx))) },
    { name: "ArtifactEdge" },
  ),
);

const CreateArtifactInput = builder.inputType("CreateArtifactInput", {
  fields: (t) => ({
    name: t.string({ required: true }),
    mimeType: t.string({ required: true, description: "e.g. text/html" }),
    content: t.string({
      required: true,
      description:
        "UTF-8 text, up to 5 MiB; your artifacts together at most MAX_ARTIFACT_BYTES_PER_PRINCIPAL (1 GiB by default), else an ArtifactStorageLimitError.",
    }),
  }),
});

const CreateArtifactSuccess = builder.objectRef<{ artifact: Artifact }>("CreateArtifactSuccess").implement({
  fields: (t) => ({ artifact: t.field({ type: ArtifactNode, resolve: (result) => result.artifact }) }),
});

builder.mutationField("createArtifact", (t) =>
  t.field({
    description:
      "Stores a TEMPORARY artifact. An ArtifactStorageLimitError says it would take your artifacts past the bytes one principal may store (retained ones and unexpired temporary ones count); nothing was created.",
    type: CreateArtifactSuccess,
    args: { input: t.arg({ type: CreateArtifactInput, required: true }) },
    errors: { types: [ValidationError, ArtifactStorageLimitError], directResult: true, union: { name: "CreateArtifactPayload" } },
    resolve: async (_root, { input }, ctx) => ({ artifact: await ctx.services.artifacts.createArtifact(ctx.actor, input) }),
  }),
);
