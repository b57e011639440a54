// The workspace's history catalog in the graph (W6): a connection over the publications its
// links lead to, newest first, each with its newest versions — identities, as-of times and
// availability, never content. A page says what it left out: the entries after it (read the next
// page with `after`) and the versions cut from its entries.
import { LIST_ITEMS, PAGE_SIZES } from "../list-connection.js";
import { GraphQLError } from "graphql";
import { ValidationError } from "../../domain/errors.js";
import {
  CATALOG_DEFAULT_ENTRIES,
  CATALOG_MAX_ENTRIES,
  CATALOG_VERSIONS_PER_ENTRY,
  type CatalogEntry,
  type CatalogTruncation,
  type CatalogVersion,
  type CatalogVia,
  type HistoryCatalog,
} from "../../domain/workspace/history-catalog.js";
import { HUMAN_SCORES_SHOWN, type HumanScore } from "../../domain/research/score-provenance.js";
import { builder } from "../builder.js";
import { encodeGlobalId } from "../global-id.js";
import { Availability } from "./history.js";
import { mine } from "./owned.js";
import { publicationShown } from "../nested-reach.js";

/** What a catalog version's sources count for in a request's cost (server/page-cost.ts). */
const CATALOG_SOURCES_COUNTED = 20;

const MaterialRef = builder.objectRef<{ publicationId: string; version: number }>("MaterialRef").implement({
  description: "An exact version of a publication, by identity (no content).",
  fields: (t) => ({
    publicationId: t.id({ resolve: (ref) => encodeGlobalId("Publication", ref.publicationId) }),
    version: t.exposeInt("version"),
  }),
});

const CatalogViaEnum = builder.enumType("CatalogVia", {
  description: "How a catalog entry is linked to the workspace.",
  values: {
    LINKED_PUBLICATION: { description: "The publication itself is linked." },
    LINKED_RUN: { description: "A linked run published a version of it." },
    LINKED_CONVERSATION: { description: "A run in a linked conversation published a version of it." },
  } satisfies Record<CatalogVia, unknown>,
});

const CatalogTruncationEnum = builder.enumType("CatalogTruncation", {
  description: "What a page of the history catalog left out. Not being listed never means not existing.",
  values: {
    MORE_ENTRIES: { description: "More entries follow this page: pass `pageInfo.endCursor` as `after` for the next one." },
    VERSIONS_CUT: {
      description: `An entry on this page lists only its newest ${CATALOG_VERSIONS_PER_ENTRY} versions (its \`versionsComplete\` is false); read older ones through \`Publication.versions\` or \`readMaterial\`.`,
    },
    MORE_ENTRIES_AND_VERSIONS_CUT: { description: "Both: more entries follow this page, and versions were cut from an entry on it." },
  } satisfies Record<CatalogTruncation, unknown>,
});

/** A catalog version as one workspace sees it (its availability is the workspace's view). */
type CatalogVersionIn = CatalogVersion & { workspaceId: string };
type CatalogEntryIn = CatalogEntry & { workspaceId: string };

const CatalogVersionRef = builder.objectRef<CatalogVersionIn>("CatalogVersion").implement({
  description: "One version in the history catalog: identity, time and provenance, never content.",
  fields: (t) => ({
    id: t.id({
      description: "Names this version as this workspace's catalog lists it: unique across the graph. The version itself is `versionId`.",
      resolve: (v) => encodeGlobalId("CatalogVersion", `${v.workspaceId}/${v.id}`),
    }),
    versionId: t.id({
      description: "The PublicationVersion's id (read it with node(id) or readMaterial).",
      resolve: (v) => encodeGlobalId("PublicationVersion", v.id),
    }),
    version: t.exposeInt("version"),
    asOf: t.field({ type: "DateTime", description: "When the judgement was formed.", resolve: (v) => v.asOf }),
    createdAt: t.field({ type: "DateTime", description: "When it was stored.", resolve: (v) => v.createdAt }),
    originRun: t.prismaField({
      type: "Run",
      nullable: true,
      resolve: (query, v, _args, ctx) => (v.originRunId ? ctx.prisma.run.findFirst({ ...query, where: { id: v.originRunId, ...mine(ctx) } }) : null),
    }),
    sources: t.field({
      type: [MaterialRef],
      // Counted at a typical size, not its bound (PUBLICATION_SOURCES_MAX): a catalog page is read
      // whole in one statement, its versions' sources with it, and resolved from memory.
      extensions: { [LIST_ITEMS]: CATALOG_SOURCES_COUNTED },
      description: "The exact versions it was built on; to an access token, those within its reach.",
      resolve: async (v, _args, ctx) => {
        const shown = await Promise.all(v.sources.map((source) => publicationShown(ctx, source.publicationId)));
        return v.sources.filter((_source, index) => shown[index]);
      },
    }),
    availability: t.field({ type: Availability, resolve: (v) => v.availability }),
    humanScores: t.field({
      type: [CatalogHumanScoreRef],
      extensions: { [LIST_ITEMS]: HUMAN_SCORES_SHOWN },
      description: `What people judged this exact version (its HUMAN scores), newest first, at most ${HUMAN_SCORES_SHOWN}: what a run listing it is shown. All its scores: \`PublicationVersion.scores\`.`,
      resolve: (v) => v.humanScores.shown,
    }),
    humanScoreCount: t.int({ description: "How many HUMAN scores the version has in all.", resolve: (v) => v.humanScores.total }),
  }),
});

const CatalogHumanScoreRef = builder.objectRef<HumanScore>("CatalogHumanScore").implement({
  description: "A person's score of a catalog version, as compactly as a run is shown it.",
  fields: (t) => ({
    configName: t.exposeString("configName"),
    value: t.exposeFloat("value", { nullable: true }),
    label: t.exposeString("label", { nullable: true }),
    by: t.exposeString("by", { description: "The name of the principal who scored." }),
    at: t.field({ type: "DateTime", resolve: (s) => s.at }),
  }),
});

const CatalogEntryRef = builder.objectRef<CatalogEntryIn>("HistoryCatalogEntry").implement({
  description: "A publication the workspace can draw on, with its newest versions.",
  fields: (t) => ({
    publicationId: t.id({ resolve: (e) => encodeGlobalId("Publication", e.publicationId) }),
    title: t.exposeString("title"),
    latestVersion: t.exposeInt("latestVersion"),
    versions: t.field({
      type: [CatalogVersionRef],
      extensions: { [LIST_ITEMS]: CATALOG_VERSIONS_PER_ENTRY },
      description: `Newest first, at most ${CATALOG_VERSIONS_PER_ENTRY}.`,
      resolve: (e) => e.versions.map((v) => ({ ...v, workspaceId: e.workspaceId })),
    }),
    versionsComplete: t.exposeBoolean("versionsComplete", { description: "False when older versions were left out." }),
    via: t.field({ type: [CatalogViaEnum], resolve: (e) => e.via }),
  }),
});

const CatalogEdgeRef = builder.objectRef<CatalogEntryIn>("HistoryCatalogEdge").implement({
  fields: (t) => ({
    cursor: t.exposeString("cursor", { description: "Pass as `after` to list the entries that follow this one." }),
    node: t.field({ type: CatalogEntryRef, resolve: (entry) => entry }),
  }),
});

type CatalogPage = Omit<HistoryCatalog, "entries"> & { entries: CatalogEntryIn[]; after: string | null };

const HistoryCatalogConnectionRef = builder.objectRef<CatalogPage>("HistoryCatalogConnection").implement({
  description:
    "A page of the history catalog (W6), newest publication first. Not being listed never means not existing: `complete` is false whenever this page left out an entry after it or a version of an entry on it, and `truncatedReason` says which.",
  fields: (t) => ({
    edges: t.field({ type: [CatalogEdgeRef], resolve: (page) => page.entries }),
    entries: t.field({ type: [CatalogEntryRef], description: "The page's entries (the edges' nodes).", resolve: (page) => page.entries }),
    pageInfo: t.field({
      type: builder.pageInfoRef(),
      resolve: (page) => ({
        hasNextPage: page.hasNextPage,
        hasPreviousPage: page.after !== null,
        startCursor: page.entries[0]?.cursor ?? null,
        endCursor: page.endCursor,
      }),
    }),
    complete: t.exposeBoolean("complete", {
      description: "True when no entry follows this page and every entry on it lists all its versions.",
    }),
    truncatedReason: t.field({
      type: CatalogTruncationEnum,
      nullable: true,
      description: "What was left out, when `complete` is false.",
      resolve: (page) => page.truncatedReason,
    }),
  }),
});

builder.prismaObjectFields("Workspace", (t) => ({
  historyCatalog: t.field({
    extensions: { [PAGE_SIZES]: { defaultSize: CATALOG_DEFAULT_ENTRIES, maxSize: CATALOG_MAX_ENTRIES } },
    type: HistoryCatalogConnectionRef,
    description: `Earlier materials drawn from the workspace's links, newest first: \`first\` entries (default ${CATALOG_DEFAULT_ENTRIES}, at most ${CATALOG_MAX_ENTRIES}) after the entry \`after\` names. Paging to the end lists every entry exactly once.`,
    args: {
      first: t.arg.int({ defaultValue: CATALOG_DEFAULT_ENTRIES }),
      after: t.arg.string({ description: "The cursor of the last entry you already have (`pageInfo.endCursor`)." }),
    },
    resolve: async (workspace, { first, after }, ctx) => {
      if (first !== null && first !== undefined && (first < 0 || first > CATALOG_MAX_ENTRIES)) {
        throw new GraphQLError(`first: must be between 0 and ${CATALOG_MAX_ENTRIES}`, { extensions: { code: "BAD_USER_INPUT" } });
      }
      try {
        const page = await ctx.services.history.catalog(ctx.actor, workspace.id, { first, after });
        return { ...page, entries: page.entries.map((entry) => ({ ...entry, workspaceId: workspace.id })), after: after ?? null };
      } catch (error) {
        // A connection has no error union: a cursor that is not the catalog's is a user error.
        if (error instanceof ValidationError) {
          throw new GraphQLError(error.message, { extensions: { code: "BAD_USER_INPUT", argument: "after" } });
        }
        throw error;
      }
    },
  }),
}));
