// One entry of the consumption ledger in the graph (W8): the stage a material reached in a run,
// with what it was about. An access token sees an entry as one reach-aware projection: nothing
// of a publication outside its reach, and a reason that names no version outside it.
import { createContextCache } from "@pothos/core";
import type { MaterialUse } from "../../generated/prisma/client.js";
import { MaterialCoverage } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import type { GraphQLContext } from "../context.js";
import { encodeGlobalId } from "../global-id.js";
import { readableRunIds } from "../granted-nodes.js";
import { publicationShown } from "../nested-reach.js";
import { loadBatched } from "../request-batch.js";
import { MaterialStageEnum } from "./history.js";
import { ofMyRun } from "./owned.js";

const OUTSIDE_REACH = "Null to an access token whose reach does not hold the publication.";

/** What an entry shows its reader: everything to a whole principal. */
type EntryShown = { publicationId: string | null; version: number | null; contentHash: string | null; reason: string | null };

const NOTHING: EntryShown = { publicationId: null, version: null, contentHash: null, reason: null };

/**
 * The reason as the reader may see it. One that names a version the entry's version rests on
 * (`unnamedReason` set) is shown whole only to a reader whose reach holds that version's
 * publication; an entry recorded before the culprit was kept names none, so a token is told the
 * unnamed wording.
 */
async function reasonShown(ctx: GraphQLContext, use: MaterialUse): Promise<string | null> {
  if (!ctx.actor.access || use.unnamedReason === null) return use.reason;
  const named = use.culpritPublicationId !== null && (await publicationShown(ctx, use.culpritPublicationId));
  return named ? use.reason : use.unnamedReason;
}

async function project(ctx: GraphQLContext, use: MaterialUse): Promise<EntryShown> {
  if (!(await publicationShown(ctx, use.publicationId))) return NOTHING;
  return {
    publicationId: encodeGlobalId("Publication", use.publicationId),
    version: use.version,
    contentHash: use.contentHash,
    reason: await reasonShown(ctx, use),
  };
}

/** Each entry read in the request, projected once for all its fields. */
const projections = createContextCache(() => new WeakMap<MaterialUse, Promise<EntryShown>>());

function shown(ctx: GraphQLContext, use: MaterialUse): Promise<EntryShown> {
  const cache = projections(ctx);
  let entry = cache.get(use);
  if (!entry) {
    entry = project(ctx, use);
    cache.set(use, entry);
  }
  return entry;
}

/** Whether the caller may READ the run: a whole principal its own; an access token one granted, or linked to a workspace it may READ (decided in the request's batch). */
async function runReadable(ctx: GraphQLContext, runId: string): Promise<boolean> {
  const scope = ctx.actor.access;
  if (!scope) return true;
  const load = async (ids: string[]) => {
    const readable = await readableRunIds(scope, ids, ctx.prisma, ctx.actor.principalId);
    return new Map(ids.map((id) => [id, readable.has(id)]));
  };
  return (await loadBatched(ctx, "run-readable", runId, load)) === true;
}

const MaterialCoverageEnum = builder.enumType(MaterialCoverage, {
  name: "MaterialCoverage",
  description: "How much of a version the range of a READ or CONSUMED entry spans: WHOLE (all of its content) or PART.",
});

const CharacterRange = builder.objectRef<{ start: number; end: number }>("CharacterRange").implement({
  description:
    "Characters [start, end) of a version's content: start is the first character, end the one after the last (exclusive). Characters are counted in UTF-16 code units, as `read_material`'s offset counts them; a range never splits a character that takes two.",
  fields: (t) => ({ start: t.exposeInt("start"), end: t.exposeInt("end") }),
});

export const MaterialUseObject = builder.prismaNode("MaterialUse", {
  id: { field: "id", description: "Names the entry in node(id), and as `after` in `Run.materialUses` and `PublicationVersion.consumedBy`." },
  nullable: true,
  // Only the owner of the run reads its ledger.
  findUnique: (id, ctx) => ({ id, ...ofMyRun(ctx) }),
  description: "One stage a material reached in one run (W8). Only CONSUMED means the run used it.",
  fields: (t) => ({
    stage: t.expose("stage", { type: MaterialStageEnum }),
    publicationId: t.id({
      nullable: true,
      description: `The publication the entry is about. ${OUTSIDE_REACH}`,
      resolve: async (use, _args, ctx) => (await shown(ctx, use)).publicationId,
    }),
    version: t.int({
      nullable: true,
      description: `The version number the entry is about. ${OUTSIDE_REACH}`,
      resolve: async (use, _args, ctx) => (await shown(ctx, use)).version,
    }),
    publicationVersion: t.relation("publicationVersion", { nullable: true, description: `Null when no such version exists. ${OUTSIDE_REACH}` }),
    reason: t.string({
      nullable: true,
      description: `UNAVAILABLE: why, as the model was told. ${OUTSIDE_REACH} Where it names a version the entry's version rests on, an access token whose reach does not hold that version's publication is told why without its title or why it was revoked.`,
      resolve: async (use, _args, ctx) => (await shown(ctx, use)).reason,
    }),
    contentHash: t.string({
      nullable: true,
      description: `READ and CONSUMED: SHA-256 (hex) of the UTF-8 encoding of exactly the characters in \`range\` — the part read, or the part the request carried. An entry without a range holds the whole version's hash. ${OUTSIDE_REACH}`,
      resolve: async (use, _args, ctx) => (await shown(ctx, use)).contentHash,
    }),
    range: t.field({
      type: CharacterRange,
      nullable: true,
      description:
        "READ: the characters the read returned. CONSUMED: the characters a model request carried verbatim (a part of what was read, never more). Null for the other stages, and for entries recorded before ranges were kept: those may have read only part of the version, so they claim no range.",
      resolve: (use) => (use.rangeStart === null || use.rangeEnd === null ? null : { start: use.rangeStart, end: use.rangeEnd }),
    }),
    coverage: t.expose("coverage", {
      type: MaterialCoverageEnum,
      nullable: true,
      description: "READ and CONSUMED: whether `range` is the whole version (WHOLE) or only part of it (PART); null exactly when `range` is.",
    }),
    requestSpan: t.prismaField({
      type: "Span",
      nullable: true,
      description: "CONSUMED: the model-request span whose request carried the content. Null to an access token that may not READ the run.",
      resolve: async (query, use, _args, ctx) => {
        if (!use.requestSpanId) return null;
        if (!(await runReadable(ctx, use.runId))) return null;
        return ctx.prisma.span.findFirst({ ...query, where: { id: use.requestSpanId, trace: { runId: use.runId } } });
      },
    }),
    run: t.relation("run"),
    at: t.expose("createdAt", { type: "DateTime" }),
  }),
});
