// A workspace's links to conversations, runs, publications and artifacts (W3), and
// retention-and-link of HTML artifacts (W16).
import { ArtifactExpiredError, NotFoundError, UnsupportedError, ValidationError, WorkspaceArchivedError } from "../../domain/errors.js";
import type { LinkTarget } from "../../domain/research/run-links.js";
import { linkPages, type PagedLink } from "../../domain/workspace/link-pages.js";
import type { RetentionOutcome } from "../../domain/workspace/link-service.js";
import type { Artifact, Conversation, Publication, Run, Workspace, WorkspaceLink } from "../../generated/prisma/client.js";
import type { LinkTargetKind } from "../../generated/prisma/enums.js";
import type { GraphQLResolveInfo } from "graphql";
import { builder } from "../builder.js";
import { exposedColumns, type Select } from "../exposed-columns.js";
import { boundedCount, countFields } from "../counted-connection.js";
import { newestFirstConnection, type PageArgs } from "../newest-first-page.js";
import { PAGE_SIZES } from "../list-connection.js";
import { loadBatched } from "../request-batch.js";
import type { GraphQLContext } from "../context.js";
import { decodeGlobalId, requireIdOfType } from "../global-id.js";
import { ArtifactNode } from "./artifact.js";
import { ConversationNode } from "./conversation.js";
import { LinkKindEnum, typenameOfKind } from "./link-kind.js";
import { PublicationNode } from "./publication.js";
import { RunNode } from "./run.js";
import { WorkspaceNode } from "./workspace.js";
import { inMyWorkspace, mine } from "./owned.js";
import { ALWAYS_RUN, pageReadWith, plannedPage } from "./link-page-plan.js";

const kindOfTypename = Object.fromEntries(Object.entries(typenameOfKind).map(([kind, typename]) => [typename, kind as LinkTargetKind]));

/** A global id of a linkable object → its kind and database id. */
function linkTargetOf(globalId: string): LinkTarget {
  const decoded = decodeGlobalId(globalId);
  const kind = decoded ? kindOfTypename[decoded.typename] : undefined;
  if (!decoded || !kind) {
    throw new ValidationError([{ field: "targetId", message: "is not the id of a conversation, run, publication or artifact" }]);
  }
  return { kind, targetId: decoded.id };
}

/** The type the union answers for each target object read (the rows themselves are not copied to say it). */
const typenameOf = new WeakMap<object, string>();

const typenames: Record<WorkspaceLink["targetKind"], string> = {
  CONVERSATION: "Conversation",
  RUN: "Run",
  PUBLICATION: "Publication",
  ARTIFACT: "Artifact",
};

/** One query per kind for all the targets a page of links asks for, only the caller's objects. */
type Linked = Conversation | Run | Publication | Artifact;

function findOwned(ctx: GraphQLContext, kind: WorkspaceLink["targetKind"], ids: string[], select: Select | undefined): Promise<Linked[]> {
  const where = { id: { in: ids }, ...mine(ctx) };
  // A select leaves out columns no selected field reads (graphql/exposed-columns.ts); the objects are only shown.
  switch (kind) {
    case "CONVERSATION":
      return ctx.prisma.conversation.findMany({ where, select }) as Promise<Linked[]>;
    case "RUN":
      return ctx.prisma.run.findMany({ where, select }) as Promise<Linked[]>;
    case "PUBLICATION":
      return ctx.prisma.publication.findMany({ where });
    case "ARTIFACT":
      return ctx.prisma.artifact.findMany({ where });
    default: {
      const unknownKind: never = kind;
      throw new Error(`unknown link kind ${String(unknownKind)}`);
    }
  }
}

/**
 * Reads the targets of a batch of links (`<kind>:<id>` keys) through their own module's
 * permission check: only the caller's objects, a query per kind.
 */
async function loadTargets(keys: string[], ctx: GraphQLContext): Promise<(Linked | null)[]> {
  // Keys are `<kind>:<columns>:<id>`: one query per kind and set of columns.
  const idsByRead = new Map<string, Set<string>>();
  for (const key of keys) {
    const cut = key.lastIndexOf(":");
    const read = key.slice(0, cut);
    idsByRead.set(read, (idsByRead.get(read) ?? new Set()).add(key.slice(cut + 1)));
  }
  const found = new Map<string, Linked>();
  await Promise.all(
    [...idsByRead].map(async ([read, ids]) => {
      const colon = read.indexOf(":");
      const kind = read.slice(0, colon) as LinkTargetKind;
      const columns = read.slice(colon + 1);
      const select = columns === "*" ? undefined : Object.fromEntries(columns.split(",").map((column) => [column, true] as const));
      for (const object of await findOwned(ctx, kind, [...ids], select)) {
        typenameOf.set(object, typenames[kind]);
        found.set(`${read}:${object.id}`, object);
      }
    }),
  );
  return keys.map((key) => found.get(key) ?? null);
}

/** Columns every target row keeps whatever is selected: the owner and what an access token's grants are checked against. */
const ALWAYS: Partial<Record<LinkTargetKind, readonly string[]>> = {
  RUN: ALWAYS_RUN,
  CONVERSATION: ["id", "ownerId"],
};

/** The load key of a link's target: its kind, the columns the client's selection needs ("*": every one) and its id. */
function targetKey(link: WorkspaceLink, info: GraphQLResolveInfo): string {
  const always = ALWAYS[link.targetKind];
  const columns = always && exposedColumns(info, typenames[link.targetKind], always);
  return `${link.targetKind}:${columns ? columns.name : "*"}:${link.targetId}`;
}

const LinkTargetUnion = builder.unionType("LinkTarget", {
  types: [ConversationNode, RunNode, PublicationNode, ArtifactNode],
  resolveType: (target) => typenameOf.get(target)!,
});

export const WorkspaceLinkNode = builder.prismaNode("WorkspaceLink", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, ...inMyWorkspace(ctx) }),
  description: "A workspace's reference to an object another module owns. Linking copies nothing.",
  fields: (t) => ({
    kind: t.expose("targetKind", { type: LinkKindEnum }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    target: t.field({
      type: LinkTargetUnion,
      nullable: true,
      description: "The linked object, read through its own permission check; null if you cannot read it.",
      resolve: (link, _args, ctx, info) => {
        // A run the page of links read with them (only the caller's: the page's join says so),
        // answered at once: no promise per link for what is already there.
        const paged = (link as PagedLink).run;
        if (paged !== undefined) {
          if (paged) typenameOf.set(paged, "Run");
          return paged as Linked | null;
        }
        return loadBatched(ctx, "linkTargets", targetKey(link, info), (keys) => targetsByKey(keys, ctx)).then((target) => target ?? null);
      },
    }),
  }),
});

/** The keys' targets, each under its key. */
async function targetsByKey(keys: string[], ctx: GraphQLContext): Promise<Map<string, Linked>> {
  const found = await loadTargets(keys, ctx);
  return new Map(keys.flatMap((key, i) => (found[i] ? [[key, found[i]] as const] : [])));
}

/**
 * The page, with its linked runs when the client shows them only by columns the page's statement
 * can read (the typical workspace read: id, status, question, createdAt): one statement less; none
 * when the `workspace` query read the same page with its workspace (link-page-plan.ts).
 */
async function linksOf(ctx: GraphQLContext, workspace: Workspace, args: PageArgs, info: GraphQLResolveInfo): Promise<WorkspaceLink[]> {
  const { page, runFields, key } = plannedPage(args, info);
  const read = pageReadWith(workspace, key);
  if (read) return read;
  const runs = runFields ? { ownerId: ctx.actor.principalId, fields: runFields } : undefined;
  return (await loadBatched(ctx, `links:${key}`, workspace.id, (workspaceIds) => linkPages(ctx.prisma, workspaceIds, page, runs))) ?? [];
}

builder.prismaObjectField(WorkspaceNode, "links", (t) =>
  t.connection(
    {
      type: WorkspaceLinkNode,
      description: "Linked objects, newest first; at most 100 a page (20 by default).",
      extensions: { [PAGE_SIZES]: { defaultSize: 20, maxSize: 100 } },
      // The pages of every workspace of the request that asks for the same page: one statement, an
      // index walk from the cursor on, at any number of links (domain/workspace/link-pages.ts).
      resolve: async (workspace, args, ctx, info) => ({
        ...newestFirstConnection(await linksOf(ctx, workspace, args, info), args),
        countRows: () => boundedCount(ctx.prisma.workspaceLink, { workspaceId: workspace.id }),
      }),
    },
    { name: "WorkspaceLinkConnection", fields: countFields() },
    { name: "WorkspaceLinkEdge" },
  ),
);

const LinkInput = builder.inputType("LinkToWorkspaceInput", {
  fields: (t) => ({
    workspaceId: t.id({ required: true }),
    targetId: t.id({ required: true, description: "A conversation, run, publication or artifact of yours." }),
  }),
});

const UnlinkInput = builder.inputType("UnlinkFromWorkspaceInput", {
  fields: (t) => ({ workspaceId: t.id({ required: true }), targetId: t.id({ required: true }) }),
});

const LinkToWorkspaceSuccess = builder.objectRef<{ link: WorkspaceLink }>("LinkToWorkspaceSuccess").implement({
  fields: (t) => ({ link: t.field({ type: WorkspaceLinkNode, resolve: (result) => result.link }) }),
});

const UnlinkFromWorkspaceSuccess = builder.objectRef<{ workspace: Workspace; unlinked: boolean }>("UnlinkFromWorkspaceSuccess").implement({
  fields: (t) => ({
    workspace: t.field({ type: WorkspaceNode, resolve: (result) => result.workspace }),
    unlinked: t.exposeBoolean("unlinked", { description: "False when there was no such link." }),
  }),
});

const RetentionOutcomeEnum = builder.enumType("ArtifactRetentionOutcome", {
  values: {
    RETAINED_AND_LINKED: { description: "The artifact module retained it and the workspace links it." },
    RETAINED_LINK_UNCONFIRMED: { description: "Retained, but the link could not be made (e.g. the workspace was archived meanwhile)." },
    NOT_RETAINED: { description: "The artifact module declined to retain it (see reason); nothing was linked." },
  } satisfies Record<RetentionOutcome, unknown>,
});

const RetainArtifactInput = builder.inputType("RetainArtifactInput", {
  fields: (t) => ({ workspaceId: t.id({ required: true }), artifactId: t.id({ required: true }) }),
});

const RetainArtifactSuccess = builder
  .objectRef<{ outcome: RetentionOutcome; reason: string | null; link: WorkspaceLink | null; artifact: Artifact }>("RetainArtifactSuccess")
  .implement({
    fields: (t) => ({
      outcome: t.field({ type: RetentionOutcomeEnum, resolve: (result) => result.outcome }),
      reason: t.exposeString("reason", { nullable: true }),
      artifact: t.field({ type: ArtifactNode, resolve: (result) => result.artifact }),
      link: t.field({ type: WorkspaceLinkNode, nullable: true, resolve: (result) => result.link }),
    }),
  });

builder.mutationFields((t) => ({
  linkToWorkspace: t.field({
    type: LinkToWorkspaceSuccess,
    description: "Links one of your objects to a workspace. Copies nothing and grants nothing; idempotent.",
    args: { input: t.arg({ type: LinkInput, required: true }) },
    errors: {
      types: [WorkspaceArchivedError, NotFoundError, ValidationError],
      directResult: true,
      union: { name: "LinkToWorkspacePayload" },
    },
    resolve: async (_root, { input }, ctx) => ({
      link: await ctx.services.links.link(
        ctx.actor,
        requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId"),
        linkTargetOf(String(input.targetId)),
      ),
    }),
  }),
  unlinkFromWorkspace: t.field({
    type: UnlinkFromWorkspaceSuccess,
    description: "Removes a link. The object itself is untouched.",
    args: { input: t.arg({ type: UnlinkInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "UnlinkFromWorkspacePayload" } },
    resolve: async (_root, { input }, ctx) => {
      const workspaceId = requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId");
      const unlinked = await ctx.services.links.unlink(ctx.actor, workspaceId, linkTargetOf(String(input.targetId)));
      return { unlinked, workspace: await ctx.prisma.workspace.findUniqueOrThrow({ where: { id: workspaceId } }) };
    },
  }),
  retainArtifact: t.field({
    type: RetainArtifactSuccess,
    description:
      "Asks the artifact module to retain an HTML artifact and links it to the workspace. An artifact already past its expiresAt is refused with ArtifactExpiredError.",
    args: { input: t.arg({ type: RetainArtifactInput, required: true }) },
    errors: {
      types: [ArtifactExpiredError, UnsupportedError, WorkspaceArchivedError, NotFoundError, ValidationError],
      directResult: true,
      union: { name: "RetainArtifactPayload" },
    },
    resolve: async (_root, { input }, ctx) => {
      const workspaceId = requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId");
      const artifactId = requireIdOfType(String(input.artifactId), "Artifact", "artifactId");
      const result = await ctx.services.links.retainArtifact(ctx.actor, workspaceId, artifactId);
      return { ...result, artifact: await ctx.prisma.artifact.findUniqueOrThrow({ where: { id: artifactId } }) };
    },
  }),
}));
