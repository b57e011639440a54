// Cross-run history in the graph (W7, W8): exact-version reads with eligibility, revocation, and
// the consumption ledger seen from the run and from the publication version. The catalog and the
// search of a workspace's history are in history-catalog.ts and history-search.ts, a ledger entry
// in material-use.ts.
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import type { Eligibility } from "../../domain/research/eligibility.js";
import { eligibilityOf } from "../../domain/research/eligibility.js";
import { type MaterialRead, missingVersion } from "../../domain/research/publication-service.js";
import type { LinkRefusal, MaterialUse, PublicationVersion } from "../../generated/prisma/client.js";
import { MaterialStage } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { REQUEST_BATCH } from "../request-batch.js";
import { encodeGlobalId, idOfType, requireIdOfType } from "../global-id.js";
import { describePage, LIST_PAGE, LONG_PAGE, type KeysetList, readConnection, listConnection } from "../list-connection.js";
import { LinkKindEnum, typenameOfKind } from "./link-kind.js";
import { PublicationVersionNode } from "./publication.js";
import { selectsField } from "../selected-fields.js";
import { ofMyPublication, ofMyRun } from "./owned.js";
import type { GraphQLContext } from "../context.js";
import { runsGranted } from "../granted-nodes.js";
import { publicationShown } from "../nested-reach.js";

/**
 * To an access token, the filter that keeps a version's consumers to the runs it may READ: decided
 * over the runs that consumed it, so that the page and its count agree. Nothing for a whole principal.
 */
async function consumersReadable(ctx: GraphQLContext, versionId: string): Promise<object> {
  const scope = ctx.actor.access;
  if (!scope) return {};
  const consumers = await ctx.prisma.materialUse.findMany({
    where: { publicationVersionId: versionId, stage: "CONSUMED", ...ofMyRun(ctx) },
    distinct: ["runId"],
    select: { run: { select: { id: true, workspaceId: true, conversationId: true } } },
  });
  const readable = await runsGranted(
    scope,
    ["READ"],
    consumers.map((use) => use.run),
    ctx.prisma,
    ctx.actor.principalId,
  );
  return { runId: { in: [...readable] } };
}

const oldestFirst = [
  ["createdAt", "asc"],
  ["id", "asc"],
] as const;
const LEDGER: KeysetList = { typename: "MaterialUse", order: oldestFirst, ...LONG_PAGE };
const CONSUMERS: KeysetList = { typename: "MaterialUse", order: oldestFirst, ...LIST_PAGE };
const ACCEPTED_VERSIONS: KeysetList = { typename: "PublicationVersion", order: oldestFirst, ...LIST_PAGE };
const LINK_REFUSALS: KeysetList = { typename: "LinkRefusal", order: oldestFirst, ...LIST_PAGE };

export const MaterialStageEnum = builder.enumType(MaterialStage, {
  name: "MaterialStage",
  description:
    "A stage of the consumption ledger: DISCOVERED (listed to the model), SELECTED (frozen at admission or asked for), READ (passed the eligibility checks), CONSUMED (a model request carried the content), UNAVAILABLE (could not be used; see reason).",
});

export const AvailabilityStatusEnum = builder.enumType("AvailabilityStatus", {
  values: {
    AVAILABLE: { description: "Eligible to be read and relied on now." },
    UNAVAILABLE: { description: "Not eligible now; `reason` says why." },
  },
});

export const Availability = builder.objectRef<Eligibility>("Availability").implement({
  description: "Whether a version may be read now (W7): not revoked, its content matches its hash, and so does everything it was built on.",
  fields: (t) => ({
    status: t.field({ type: AvailabilityStatusEnum, resolve: (e) => (e.eligible ? "AVAILABLE" : "UNAVAILABLE") }),
    reason: t.string({
      nullable: true,
      description:
        "Why not, naming the version that broke eligibility. To an access token whose reach does not hold that version's publication: without its title or why it was revoked.",
      resolve: async (e, _args, ctx) => {
        if (e.eligible) return null;
        return (await publicationShown(ctx, e.culprit.publicationId)) ? e.reason : e.unnamedReason;
      },
    }),
    unavailableSource: t.prismaField({
      type: "PublicationVersion",
      nullable: true,
      description: "The version that broke eligibility: this one, or one it was built on.",
      // A catalog page names the culprit of every unavailable version: its body (up to a megabyte)
      // is read only when the client asks for it.
      resolve: (query, e, _args, ctx, info) =>
        e.eligible
          ? null
          : (ctx.prisma.publicationVersion.findFirst({
              ...query,
              ...(selectsField(info, "content") ? {} : { omit: { content: true } }),
              where: { id: e.culprit.versionId, ...ofMyPublication(ctx) },
            }) as Promise<PublicationVersion | null>),
    }),
  }),
});

const MaterialReadRef = builder.objectRef<MaterialRead>("MaterialRead").implement({
  description: "The outcome of an exact-version read: that version, never a newer one, or why it cannot be used.",
  fields: (t) => ({
    status: t.field({ type: AvailabilityStatusEnum, resolve: (r) => r.status }),
    reason: t.string({
      nullable: true,
      description: "Why not. To an access token whose reach does not hold the version that broke eligibility: without its title or why it was revoked.",
      resolve: async (r, _args, ctx) => {
        if (r.status !== "UNAVAILABLE") return null;
        return r.unnamed && !(await publicationShown(ctx, r.unnamed.publicationId)) ? r.unnamed.reason : r.reason;
      },
    }),
    publicationVersion: t.field({
      type: PublicationVersionNode,
      nullable: true,
      description: "The version read, with its content; null when unavailable.",
      resolve: (r) => (r.status === "AVAILABLE" ? r.version : null),
    }),
  }),
});

builder.queryField("readMaterial", (t) =>
  t.field({
    type: MaterialReadRef,
    description: "Reads exactly one version of a publication, after checking it and its sources are still eligible (W7).",
    args: { publicationId: t.arg.id({ required: true }), version: t.arg.int({ required: true }) },
    resolve: (_root, args, ctx) => {
      const publicationId = idOfType(String(args.publicationId), "Publication");
      if (!publicationId) {
        return missingVersion(args.version);
      }
      return ctx.services.publications.readVersion(ctx.actor, { publicationId, version: args.version });
    },
  }),
);

const RevokeInput = builder.inputType("RevokePublicationVersionInput", {
  fields: (t) => ({
    publicationId: t.id({ required: true }),
    version: t.int({ required: true }),
    reason: t.string({ required: true, description: "Why it may no longer be relied on; readers are told." }),
  }),
});

const RevokeSuccess = builder.objectRef<{ publicationVersion: PublicationVersion }>("RevokePublicationVersionSuccess").implement({
  fields: (t) => ({ publicationVersion: t.field({ type: PublicationVersionNode, resolve: (r) => r.publicationVersion }) }),
});

builder.mutationField("revokePublicationVersion", (t) =>
  t.field({
    type: RevokeSuccess,
    description:
      "Makes one version ineligible: reads of it, and of every version and checkpoint built on it, become UNAVAILABLE. The content is kept. Revoking again keeps the first reason.",
    args: { input: t.arg({ type: RevokeInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "RevokePublicationVersionPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      publicationVersion: await ctx.services.publications.revokeVersion(ctx.actor, {
        publicationId: requireIdOfType(String(input.publicationId), "Publication", "publicationId"),
        version: input.version,
        reason: input.reason,
      }),
    }),
  }),
);

builder.prismaObjectFields("Run", (t) => ({
  materialUses: listConnection<{ id: string }, { stage?: MaterialStage | null }>(t, {
    type: "MaterialUse",
    name: "RunMaterialUseConnection",
    description: describePage("The run's consumption ledger, oldest first; optionally only one stage.", LEDGER),
    list: LEDGER,
    args: { stage: t.arg({ type: MaterialStageEnum }) },
    resolve: (query, run, { stage, ...args }, ctx) =>
      readConnection<MaterialUse>(ctx.prisma.materialUse, LEDGER, args, { scope: { runId: run.id }, where: stage ? { stage } : {}, query }),
  }),
  acceptedPublicationVersions: listConnection(t, {
    type: "PublicationVersion",
    name: "RunAcceptedVersionConnection",
    description: describePage("The versions the run's answer was published as, oldest first.", ACCEPTED_VERSIONS),
    list: ACCEPTED_VERSIONS,
    resolve: async (query, run, args, ctx) => ({
      ...(await readConnection<PublicationVersion>(ctx.prisma.publicationVersion, ACCEPTED_VERSIONS, args, { scope: { originRunId: run.id }, query })),
      countByPublication: async () => {
        const groups = await ctx.prisma.publicationVersion.groupBy({ by: ["publicationId"], where: { originRunId: run.id }, _count: { _all: true } });
        return new Map(groups.map((group) => [group.publicationId, group._count._all]));
      },
    }),
  }),
}));

builder.prismaObjectFields("PublicationVersion", (t) => ({
  revokedAt: t.expose("revokedAt", { type: "DateTime", nullable: true }),
  revocationReason: t.exposeString("revocationReason", { nullable: true }),
  availability: t.loadable({
    type: Availability,
    description: "Whether it may be read and relied on now.",
    // The versions of one list are checked together, in one query.
    load: async (ids: string[], ctx): Promise<Eligibility[]> => {
      const found = await eligibilityOf(ctx.prisma, [...new Set(ids)]);
      return ids.map((id) => found.get(id) ?? { eligible: true });
    },
    loaderOptions: REQUEST_BATCH,
    resolve: (version) => version.id,
  }),
  consumedBy: listConnection(t, {
    type: "MaterialUse",
    name: "PublicationVersionConsumerConnection",
    description: describePage(
      "The runs (yours; to an access token, those it may READ) whose model requests carried this version's content: their CONSUMED entries, oldest first. Each names the range carried; `coverage` PART says the run consumed only part of the version (a run that read it in parts has one entry per part).",
      CONSUMERS,
    ),
    list: CONSUMERS,
    resolve: async (query, version, args, ctx) =>
      readConnection<MaterialUse>(ctx.prisma.materialUse, CONSUMERS, args, {
        scope: { publicationVersionId: version.id, ...ofMyRun(ctx), ...(await consumersReadable(ctx, version.id)) },
        where: { stage: "CONSUMED" },
        query,
      }),
  }),
}));

const LinkRefusalReasonEnum = builder.enumType("LinkRefusalReason", {
  values: {
    WORKSPACE_ARCHIVED: { description: "The workspace was archived when the run published." },
    WORKSPACE_DELETED: { description: "The workspace had been deleted; it is not recreated." },
  },
});

builder.prismaObject("LinkRefusal", {
  description: "A link to the run's workspace that was asked for when the run published and not created (W14, W15).",
  fields: (t) => ({
    id: t.id({ description: "Names the refusal as `after` in `Run.linkRefusals`.", resolve: (r) => encodeGlobalId("LinkRefusal", r.id) }),
    kind: t.expose("targetKind", { type: LinkKindEnum }),
    targetId: t.id({ resolve: (r) => encodeGlobalId(typenameOfKind[r.targetKind], r.targetId) }),
    reason: t.expose("reason", { type: LinkRefusalReasonEnum }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

builder.prismaObjectFields("Run", (t) => ({
  linkRefusals: listConnection(t, {
    type: "LinkRefusal",
    name: "LinkRefusalConnection",
    description: describePage("Links to the run's workspace that were refused because it was archived or deleted by then, oldest first.", LINK_REFUSALS),
    list: LINK_REFUSALS,
    resolve: (query, run, args, ctx) => readConnection<LinkRefusal>(ctx.prisma.linkRefusal, LINK_REFUSALS, args, { scope: { runId: run.id }, query }),
  }),
}));
