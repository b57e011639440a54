// Publications and their immutable versions.
import { LIST_ITEMS, paged } from "../list-connection.js";
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import { PUBLICATION_CONTENT_MAX, PUBLICATION_SOURCES_MAX } from "../../domain/research/publication-service.js";
import type { RunLinkOutcome } from "../../domain/research/run-links.js";
import type { PrismaClient, PublicationVersion } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { largeText } from "../large-text.js";
import { boundedCount, countFields } from "../counted-connection.js";
import { requireIdOfType } from "../global-id.js";
import { loadBatched } from "../request-batch.js";
import { mine, newestFirst, ofMyPublication, ownedBy } from "./owned.js";

export const MaterialRefInput = builder.inputType("MaterialRefInput", {
  description: "An exact version of a publication.",
  fields: (t) => ({ publicationId: t.id({ required: true }), version: t.int({ required: true }) }),
});

/** Global publication ids → database ids; a malformed one is a ValidationError naming its index. */
export function materialRefsToDomain(refs: { publicationId: string | number; version: number }[], field: string) {
  return refs.map((ref, index) => ({
    publicationId: requireIdOfType(String(ref.publicationId), "Publication", `${field}.${index}.publicationId`),
    version: ref.version,
  }));
}

/** The source version ids of each version, in the order given. */
async function sourceIdsOf(prisma: PrismaClient, versionIds: string[]): Promise<Map<string, string[]>> {
  const sources = await prisma.publicationSource.findMany({
    where: { versionId: { in: versionIds } },
    orderBy: [{ versionId: "asc" }, { position: "asc" }],
    select: { versionId: true, sourceVersionId: true },
    take: versionIds.length * PUBLICATION_SOURCES_MAX,
  });
  const byVersion = new Map<string, string[]>();
  for (const { versionId, sourceVersionId } of sources) {
    const ids = byVersion.get(versionId) ?? byVersion.set(versionId, []).get(versionId)!;
    if (ids.length < PUBLICATION_SOURCES_MAX) ids.push(sourceVersionId);
  }
  return byVersion;
}

async function versionsById(prisma: PrismaClient, query: { select?: object }, ids: string[]): Promise<Map<string, PublicationVersion>> {
  // The id the rows are matched by, whatever the request selects.
  const selection = query.select ? { ...query, select: { ...query.select, id: true } } : query;
  const rows = await prisma.publicationVersion.findMany({ ...selection, where: { id: { in: ids } } });
  return new Map(rows.map((row) => [row.id, row]));
}

export const PublicationVersionNode = builder.prismaNode("PublicationVersion", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, ...ofMyPublication(ctx) }),
  description: "One immutable version of a publication.",
  fields: (t) => ({
    version: t.exposeInt("version"),
    content: t.exposeString("content", { extensions: largeText(PUBLICATION_CONTENT_MAX) }),
    contentHash: t.exposeString("contentHash", { description: "SHA-256 (hex) of the UTF-8 content." }),
    asOf: t.expose("asOf", { type: "DateTime", description: "When the judgement was formed." }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When it was stored." }),
    publication: t.relation("publication"),
    originRun: t.relation("originRun", { nullable: true }),
    sources: t.prismaField({
      type: ["PublicationVersion"],
      extensions: { [LIST_ITEMS]: PUBLICATION_SOURCES_MAX },
      description: `The exact versions this version was built on, in the order given: at most ${PUBLICATION_SOURCES_MAX}, all of them (an access token is shown those readMaterial would show it).`,
      // The versions of one request that ask are answered together, and a version cited by several
      // is loaded once (the same row for each): a page of versions citing the same long sources
      // holds each source's content once.
      resolve: async (query, version, _args, ctx) => {
        const ids = (await loadBatched(ctx, "publication-sources", version.id, (versionIds) => sourceIdsOf(ctx.prisma, versionIds))) ?? [];
        const rows = await Promise.all(
          ids.map((id) => loadBatched(ctx, `publication-version:${JSON.stringify(query)}`, id, (sourceIds) => versionsById(ctx.prisma, query, sourceIds))),
        );
        return rows.filter((row): row is PublicationVersion => row !== undefined);
      },
    }),
  }),
});

export const PublicationNode = builder.prismaNode("Publication", {
  id: { field: "id" },
  nullable: true,
  findUnique: ownedBy,
  description: "A research result; its content lives in immutable versions.",
  fields: (t) => ({
    title: t.exposeString("title"),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    latestVersion: t.field({
      type: PublicationVersionNode,
      select: (_args, _ctx, nested) => ({ versions: nested({ orderBy: { version: "desc" }, take: 1 }) }),
      resolve: (publication) => {
        const [latest] = publication.versions;
        if (!latest) throw new Error("A publication without a version breaks the publication invariant.");
        return latest;
      },
    }),
    version: t.prismaField({
      type: "PublicationVersion",
      nullable: true,
      description: "Exactly version n, never a newer one; null if there is no such version.",
      args: { n: t.arg.int({ required: true }) },
      resolve: (query, publication, { n }, ctx) =>
        ctx.prisma.publicationVersion.findUnique({
          ...query,
          where: { publicationId_version: { publicationId: publication.id, version: n } },
        }),
    }),
    versions: t.prismaConnection(
      {
        type: "PublicationVersion",
        description: "Every version, newest first.",
        cursor: "id",
        ...paged({ defaultSize: 20, maxSize: 100 }),
        resolve: (query, publication, _args, ctx) =>
          ctx.prisma.publicationVersion.findMany({ ...query, where: { publicationId: publication.id }, orderBy: { version: "desc" } }),
      },
      {
        name: "PublicationVersionConnection",
        fields: countFields<{ id: string }>((publication, ctx) => boundedCount(ctx.prisma.publicationVersion, { publicationId: publication.id })),
      },
      { name: "PublicationVersionEdge" },
    ),
  }),
});

builder.queryField("publications", (t) =>
  t.prismaConnection(
    {
      type: "Publication",
      description: "Your publications, newest first.",
      cursor: "id",
      ...paged({ defaultSize: 20, maxSize: 100 }),
      resolve: (query, _root, _args, ctx) => ctx.prisma.publication.findMany({ ...query, where: mine(ctx), orderBy: newestFirst }),
    },
    { name: "PublicationConnection", fields: countFields<unknown>((_root, ctx) => boundedCount(ctx.prisma.publication, mine(ctx))) },
    { name: "PublicationEdge" },
  ),
);

const WorkspaceLinkOutcomeEnum = builder.enumType("WorkspaceLinkOutcome", {
  description: "Whether a version published by a run was linked to the run's workspace.",
  values: {
    LINKED: { description: "Linked to the workspace the origin run was admitted in." },
    NOT_LINKED_WORKSPACE_ARCHIVED: { description: "The workspace is archived; the refusal is recorded." },
    NOT_LINKED_WORKSPACE_DELETED: { description: "The workspace was deleted; it is not recreated." },
    NO_WORKSPACE: { description: "No origin run, or it was admitted outside any workspace." },
  } satisfies Record<RunLinkOutcome, unknown>,
});

const PublishVersionInput = builder.inputType("PublishVersionInput", {
  fields: (t) => ({
    publicationId: t.id({ description: "Add a version to this publication; omit to create a publication." }),
    title: t.string({ description: "Required when creating a publication, and only then." }),
    content: t.string({ required: true }),
    sources: t.field({ type: [MaterialRefInput], description: "Exact versions this one was built on." }),
    asOf: t.field({ type: "DateTime", description: "When the judgement was formed; default now." }),
    originRunId: t.id({ description: "The run that produced it; the version is linked to that run's workspace." }),
  }),
});

const PublishVersionSuccess = builder.objectRef<{ version: PublicationVersion; workspaceLink: RunLinkOutcome }>("PublishVersionSuccess").implement({
  fields: (t) => ({
    version: t.field({ type: PublicationVersionNode, resolve: (result) => result.version }),
    workspaceLink: t.field({ type: WorkspaceLinkOutcomeEnum, resolve: (result) => result.workspaceLink }),
  }),
});

builder.mutationField("publishVersion", (t) =>
  t.field({
    type: PublishVersionSuccess,
    description: "Creates a new immutable version, or a new publication with its first version.",
    args: { input: t.arg({ type: PublishVersionInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "PublishVersionPayload" } },
    resolve: (_root, { input }, ctx) =>
      ctx.services.publications.publishVersion(ctx.actor, {
        ...input,
        publicationId: input.publicationId ? requireIdOfType(String(input.publicationId), "Publication", "publicationId") : null,
        originRunId: input.originRunId ? requireIdOfType(String(input.originRunId), "Run", "originRunId") : null,
        sources: input.sources ? materialRefsToDomain(input.sources, "sources") : [],
      }),
  }),
);
