// Per-section provenance of a checkpoint in the graph (W10, W13): who wrote the summary, each
// question and the next steps, and the versions each rests on — kept across later revisions that
// leave the section as it was.
import type { SectionAuthor, SectionRef } from "../../domain/workspace/checkpoint-sections.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { describePage, LIST_PAGE, type ListPage, listConnection, type PageArgs, readIdsConnection } from "../list-connection.js";
import { isCaller, mine, ofMyPublication } from "./owned.js";

/** A checkpoint's version lists are ids in its row; they are paged in the order stored. */
export const CHECKPOINT_VERSIONS: ListPage = { typename: "PublicationVersion", ...LIST_PAGE };

/** The versions with these ids that the caller may see, in the order of `ids` (a page of a checkpoint's list). */
export async function versionsById(ctx: { prisma: PrismaClient; actor: { principalId: string } }, query: object, ids: string[]) {
  if (ids.length === 0) return [];
  const found = await ctx.prisma.publicationVersion.findMany({
    ...query,
    where: { id: { in: ids }, ...ofMyPublication(ctx) },
    take: ids.length,
  });
  const byId = new Map(found.map((v) => [v.id, v]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** How many of `ids` (versions, repeats counted) each publication has: one statement. */
export async function versionsByPublication(ctx: { prisma: PrismaClient }, ids: readonly string[]): Promise<Map<string, number>> {
  const rows =
    ids.length === 0
      ? []
      : await ctx.prisma.publicationVersion.findMany({ where: { id: { in: [...new Set(ids)] } }, select: { id: true, publicationId: true } });
  const publicationOf = new Map(rows.map((row) => [row.id, row.publicationId]));
  const counts = new Map<string, number>();
  for (const id of ids) {
    const publicationId = publicationOf.get(id);
    if (publicationId !== undefined) counts.set(publicationId, (counts.get(publicationId) ?? 0) + 1);
  }
  return counts;
}

/** A page of a checkpoint's list of versions, counted by publication for an access token. */
export async function checkpointVersions(ctx: { prisma: PrismaClient; actor: { principalId: string } }, query: object, args: PageArgs, ids: string[]) {
  const connection = await readIdsConnection(CHECKPOINT_VERSIONS, args, ids, (page) => versionsById(ctx, query, page));
  return { ...connection, countByPublication: () => versionsByPublication(ctx, ids) };
}

const AuthorKindEnum = builder.enumType("CheckpointAuthorKind", {
  description: "OWNER: the workspace's owner wrote it — their decision. MODEL_RUN: a run's model wrote it — a suggestion, not a fact or a user decision.",
  values: ["OWNER", "MODEL_RUN"] as const,
});

const SectionKindEnum = builder.enumType("CheckpointSectionKind", {
  description: "A part of a checkpoint that carries its own author and sources.",
  values: ["SUMMARY", "QUESTION", "NEXT_STEPS"] as const,
});

const CheckpointAuthorRef = builder.objectRef<SectionAuthor>("CheckpointAuthor").implement({
  description: "Who wrote a checkpoint section.",
  fields: (t) => ({
    kind: t.field({ type: AuthorKindEnum, resolve: (a) => a.kind }),
    run: t.prismaField({
      type: "Run",
      nullable: true,
      description: "MODEL_RUN: the run whose model wrote the section; null for OWNER.",
      resolve: (query, a, _args, ctx) => (a.kind === "MODEL_RUN" ? ctx.prisma.run.findFirst({ ...query, where: { id: a.runId, ...mine(ctx) } }) : null),
    }),
    principal: t.prismaField({
      type: "Principal",
      nullable: true,
      description: "The owner who wrote it, or on whose behalf the run did.",
      resolve: (query, a, _args, ctx) => (isCaller(ctx, a.principalId) ? ctx.prisma.principal.findUnique({ ...query, where: { id: a.principalId } }) : null),
    }),
  }),
});

export const CheckpointSectionProvenanceRef = builder.objectRef<SectionRef>("CheckpointSectionProvenance").implement({
  description:
    "Who wrote one section of a checkpoint and the publication versions it rests on. A revision that keeps a section as it was keeps its author and sources; one that rewrites it (for a question: its text or status) makes it the writer's.",
  fields: (t) => ({
    section: t.field({ type: SectionKindEnum, resolve: (s) => s.section }),
    questionId: t.string({ nullable: true, description: "QUESTION: the question's id.", resolve: (s) => s.questionId }),
    author: t.field({ type: CheckpointAuthorRef, resolve: (s) => s.provenance.author }),
    sources: listConnection<SectionRef>(t, {
      type: "PublicationVersion",
      name: "SectionSourceConnection",
      description: describePage(
        "The versions this section rests on, in the order recorded; if one loses eligibility, the checkpoint reads as UNAVAILABLE.",
        CHECKPOINT_VERSIONS,
      ),
      list: CHECKPOINT_VERSIONS,
      resolve: (query, s, args, ctx) => checkpointVersions(ctx, query, args, s.provenance.sourceVersionIds),
    }),
  }),
});
