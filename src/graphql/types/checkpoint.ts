// Checkpoints in the graph (W10–W13): the current revision and its history, each shown only
// while everything it rests on is eligible, and compare-and-swap updates.
import { IneligibleSourceError, NotFoundError, StaleRevisionError, ValidationError } from "../../domain/errors.js";
import { type JsonValue, nextStepsOf, versionIdsOf } from "../../domain/json-columns.js";
import { type CheckpointRead, type CheckpointQuestion, questionsOf } from "../../domain/workspace/checkpoint-service.js";
import { type SectionProvenance, type SectionRef, sectionList, sectionsOf } from "../../domain/workspace/checkpoint-sections.js";
import type { CheckpointProposal, CheckpointVersion } from "../../generated/prisma/client.js";
import { CheckpointOrigin, CheckpointProposalStatus } from "../../generated/prisma/enums.js";
import { CHECKPOINT_LINE_MAX, CHECKPOINT_NEXT_STEPS_MAX, CHECKPOINT_SUMMARY_MAX, CITED_MATERIALS_MAX } from "../../domain/workspace/checkpoint-service.js";
import { builder } from "../builder.js";
import { defineEntityNode } from "../entity-nodes.js";
import { largeText } from "../large-text.js";
import { encodeGlobalId, idOfType, requireIdOfType } from "../global-id.js";
import { describePage, LIST_ITEMS, LIST_PAGE, type KeysetList, readConnection, listConnection } from "../list-connection.js";
import { CHECKPOINT_VERSIONS, CheckpointSectionProvenanceRef, checkpointVersions, versionsById } from "./checkpoint-provenance.js";
import { AvailabilityStatusEnum } from "./history.js";
import { inMyWorkspace, mine, ofMyPublication } from "./owned.js";
const PROPOSALS: KeysetList = {
  typename: "CheckpointProposal",
  order: [
    ["createdAt", "asc"],
    ["id", "asc"],
  ],
  ...LIST_PAGE,
};

const CheckpointOriginEnum = builder.enumType(CheckpointOrigin, {
  name: "CheckpointOrigin",
  description:
    "USER: written by the workspace's owner. MODEL_SUGGESTION: proposed by a run's model and accepted by compare-and-swap — a suggestion, not a fact.",
});

const QuestionStatusEnum = builder.enumType("CheckpointQuestionStatus", { values: ["OPEN", "RESOLVED"] as const });

type QuestionInRevision = CheckpointQuestion & { provenance: SectionProvenance; checkpointId: string };

/** A question as one revision reads it: its text may differ in another revision, so its id does too. */
const questionGlobalId = (q: QuestionInRevision) => encodeGlobalId("CheckpointQuestion", `${q.checkpointId}/${q.id}`);

const CheckpointQuestionRef = builder.objectRef<QuestionInRevision>("CheckpointQuestion").implement({
  description: "An open or resolved research question as one revision reads it; its questionId stays the same across revisions.",
  fields: (t) => ({
    id: t.id({ description: "Names this question in this revision, unique across the graph (a client cache may key on it).", resolve: questionGlobalId }),
    questionId: t.exposeString("id", {
      description: "The question's id within the checkpoint, e.g. q1: the same in every revision. Name it (or `id`) in CheckpointQuestionInput.id.",
    }),
    text: t.exposeString("text", { extensions: largeText(CHECKPOINT_LINE_MAX) }),
    status: t.field({ type: QuestionStatusEnum, resolve: (q) => q.status }),
    provenance: t.field({
      type: CheckpointSectionProvenanceRef,
      description: "Who wrote the question as it reads now (its text and status) and what it rests on.",
      resolve: (q): SectionRef => ({ section: "QUESTION", questionId: q.id, provenance: q.provenance }),
    }),
  }),
});

/** The questions of a revision with who wrote each; every stored question has its provenance. */
function questionsWithProvenance(checkpoint: CheckpointVersion) {
  const sections = sectionsOf(checkpoint);
  return questionsOf(checkpoint).map((q) => {
    const provenance = sections.questions[q.id];
    if (!provenance) throw new Error(`checkpoint ${checkpoint.id} has no provenance for question ${q.id}`);
    return { ...q, provenance, checkpointId: checkpoint.id };
  });
}

const sectionOf = (checkpoint: CheckpointVersion, section: "SUMMARY" | "NEXT_STEPS"): SectionRef | null => {
  const provenance = sectionsOf(checkpoint)[section === "SUMMARY" ? "summary" : "nextSteps"];
  return provenance ? { section, questionId: null, provenance } : null;
};

type Available = Extract<CheckpointRead, { status: "AVAILABLE" }>;
type Unavailable = Extract<CheckpointRead, { status: "UNAVAILABLE" }>;

const versionsIn = (ids: JsonValue) => versionIdsOf(ids) ?? [];

/** Both shapes of a revision carry the same id, which names the revision whatever it reads as. */
const revisionId = (r: CheckpointRead) => encodeGlobalId("CheckpointVersion", r.checkpoint.id);

export const Checkpoint = builder.objectRef<Available>("Checkpoint").implement({
  description: "A revision of the workspace's research-progress record (W10), with its provenance.",
  interfaces: [builder.nodeInterfaceRef()],
  isTypeOf: (value) => (value as CheckpointRead).status === "AVAILABLE",
  fields: (t) => ({
    id: t.id({ description: "Names this revision in node(id), available or not.", resolve: revisionId }),
    status: t.field({ type: AvailabilityStatusEnum, resolve: () => "AVAILABLE" as const }),
    revision: t.int({ resolve: (r) => r.checkpoint.revision }),
    summary: t.string({ nullable: true, extensions: largeText(CHECKPOINT_SUMMARY_MAX), resolve: (r) => r.checkpoint.summary }),
    summaryProvenance: t.field({
      type: CheckpointSectionProvenanceRef,
      nullable: true,
      description: "Who wrote the summary and what it rests on; null when there is no summary.",
      resolve: (r) => sectionOf(r.checkpoint, "SUMMARY"),
    }),
    questions: t.field({ type: [CheckpointQuestionRef], extensions: { [LIST_ITEMS]: 100 }, resolve: (r) => questionsWithProvenance(r.checkpoint) }),
    nextSteps: t.stringList({
      extensions: largeText(CHECKPOINT_NEXT_STEPS_MAX * CHECKPOINT_LINE_MAX),
      resolve: (r) => nextStepsOf(r.checkpoint.nextSteps) ?? [],
    }),
    nextStepsProvenance: t.field({
      type: CheckpointSectionProvenanceRef,
      nullable: true,
      description: "Who wrote the next steps and what they rest on; null when there are none.",
      resolve: (r) => sectionOf(r.checkpoint, "NEXT_STEPS"),
    }),
    sections: t.field({
      type: [CheckpointSectionProvenanceRef],
      extensions: { [LIST_ITEMS]: 102 },
      description: "Every section with content and who wrote it, in reading order: summary, questions, next steps.",
      resolve: (r) => sectionList(r.checkpoint),
    }),
  }),
});

// Who made the revision and what it rests on.
builder.objectFields(Checkpoint, (t) => ({
  origin: t.field({
    type: CheckpointOriginEnum,
    description: "Who made this revision. Sections it kept keep their own authors: see each section's provenance.",
    resolve: (r) => r.checkpoint.origin,
  }),
  modelSuggestion: t.boolean({
    description:
      "True when a model proposed this revision: a suggestion, not a user decision or a fact about the world. A revision by the owner may still hold sections a model wrote: see each section's provenance.",
    resolve: (r) => r.checkpoint.origin === "MODEL_SUGGESTION",
  }),
  originRun: t.prismaField({
    type: "Run",
    nullable: true,
    resolve: (query, r, _args, ctx) =>
      r.checkpoint.originRunId ? ctx.prisma.run.findFirst({ ...query, where: { id: r.checkpoint.originRunId, ...mine(ctx) } }) : null,
  }),
  acceptedPublicationVersions: listConnection<Available>(t, {
    type: "PublicationVersion",
    name: "CheckpointAcceptedVersionConnection",
    description: describePage("The versions the origin run's answer was published as, oldest first.", CHECKPOINT_VERSIONS),
    list: CHECKPOINT_VERSIONS,
    resolve: (query, r, args, ctx) => checkpointVersions(ctx, query, args, versionsIn(r.checkpoint.acceptedVersionIds)),
  }),
  citedMaterials: t.prismaField({
    type: ["PublicationVersion"],
    extensions: { [LIST_ITEMS]: CITED_MATERIALS_MAX },
    description: `The materials the proposal cited (read by the origin run), in the order cited: at most ${CITED_MATERIALS_MAX}, all of them.`,
    resolve: (query, r, _args, ctx) => versionsById(ctx, query, versionsIn(r.checkpoint.citedVersionIds).slice(0, CITED_MATERIALS_MAX)),
  }),
  sourceDependencies: listConnection<Available>(t, {
    type: "PublicationVersion",
    name: "CheckpointSourceConnection",
    description: describePage(
      "Every version this revision rests on — the sources of all its sections, kept ones included — in the order recorded; if one loses eligibility, the checkpoint reads as UNAVAILABLE.",
      CHECKPOINT_VERSIONS,
    ),
    list: CHECKPOINT_VERSIONS,
    resolve: (query, r, args, ctx) => checkpointVersions(ctx, query, args, versionsIn(r.checkpoint.sourceVersionIds)),
  }),
  createdAt: t.field({ type: "DateTime", resolve: (r) => r.checkpoint.createdAt }),
}));

export const UnavailableCheckpoint = builder.objectRef<Unavailable>("UnavailableCheckpoint").implement({
  description: "A checkpoint revision that rests on a version which lost eligibility (W13); its judgement is withheld.",
  interfaces: [builder.nodeInterfaceRef()],
  isTypeOf: (value) => (value as CheckpointRead).status === "UNAVAILABLE",
  fields: (t) => ({
    id: t.id({ description: "Names this revision in node(id), available or not.", resolve: revisionId }),
    status: t.field({ type: AvailabilityStatusEnum, resolve: () => "UNAVAILABLE" as const }),
    revision: t.int({ resolve: (r) => r.checkpoint.revision }),
    reason: t.string({ resolve: (r) => r.reason }),
    unavailableSource: t.prismaField({
      type: "PublicationVersion",
      nullable: true,
      description: "The version that is no longer eligible (the first one met, in reading order of the sections).",
      resolve: (query, r, _args, ctx) => ctx.prisma.publicationVersion.findFirst({ ...query, where: { id: r.sourceVersionId, ...ofMyPublication(ctx) } }),
    }),
    withheldSections: t.field({
      type: [CheckpointSectionProvenanceRef],
      extensions: { [LIST_ITEMS]: 102 },
      description:
        "The sections resting on a version that lost eligibility, with who wrote each and what it rests on (never their content). Rewriting them — or the whole checkpoint — on eligible sources makes the next revision available.",
      resolve: (r) => r.withheld,
    }),
    createdAt: t.field({ type: "DateTime", resolve: (r) => r.checkpoint.createdAt }),
  }),
});

// node(id) shows a revision to the owner of its workspace while the workspace is not deleted.
defineEntityNode("CheckpointVersion", async (id, ctx) => {
  const checkpoint = await ctx.prisma.checkpointVersion.findFirst({
    where: { id, ...inMyWorkspace(ctx) },
  });
  return checkpoint ? (await ctx.services.checkpoints.withAvailability([checkpoint], ctx.actor))[0]! : null;
});

const CheckpointReadUnion = builder.unionType("CheckpointRead", {
  description: "A checkpoint revision: its content while available, or why it is withheld.",
  types: [Checkpoint, UnavailableCheckpoint],
  resolveType: (value) => (value.status === "AVAILABLE" ? "Checkpoint" : "UnavailableCheckpoint"),
});

builder.prismaObjectFields("Workspace", (t) => ({
  checkpointRevision: t.exposeInt("checkpointRevision", {
    description: "The current checkpoint revision; 0 before the first. Send it as expectedRevision to update.",
  }),
  checkpoint: t.field({
    type: CheckpointReadUnion,
    nullable: true,
    description: "The current checkpoint, or null before the first.",
    resolve: (workspace, _args, ctx) => ctx.services.checkpoints.current(ctx.actor, workspace.id),
  }),
  checkpointVersions: t.field({
    type: [CheckpointReadUnion],
    description: "Every revision, newest first (default 20, at most 100).",
    args: { first: t.arg.int({ defaultValue: 20 }) },
    resolve: (workspace, { first }, ctx) => ctx.services.checkpoints.versions(ctx.actor, workspace.id, first ?? 20),
  }),
}));

const QuestionChangeInput = builder.inputType("CheckpointQuestionInput", {
  description: "Without id: a new question (text required). With id: changes that question's text and/or status.",
  fields: (t) => ({
    id: t.string({ description: "The question's questionId (e.g. q1) or its id from any revision." }),
    text: t.string(),
    status: t.field({ type: QuestionStatusEnum }),
  }),
});

const UpdateCheckpointInput = builder.inputType("UpdateCheckpointInput", {
  fields: (t) => ({
    workspaceId: t.id({ required: true }),
    expectedRevision: t.int({ required: true, description: "The current revision (0 for the first checkpoint)." }),
    summary: t.string({ description: "Replaces the summary; omit to keep it." }),
    nextSteps: t.stringList({ description: "Replaces the next steps; omit to keep them." }),
    questions: t.field({
      type: [QuestionChangeInput],
      required: true,
      description: "Questions to add or change. Questions not mentioned stay as they are: omission is not resolution.",
    }),
    sources: t.idList({
      description:
        "PublicationVersion ids the sections this update rewrites rest on (default none). Each must be yours and eligible. A section the update rewrites — a new or different summary or next steps, a question added or with a changed text or status — becomes yours, resting on these; sections it keeps as they were keep their author and sources.",
    }),
  }),
});

const UpdateCheckpointSuccess = builder.objectRef<{ checkpoint: CheckpointVersion }>("UpdateCheckpointSuccess").implement({
  fields: (t) => ({
    checkpoint: t.field({
      type: Checkpoint,
      description: "The revision just created.",
      resolve: (r) => ({ status: "AVAILABLE" as const, checkpoint: r.checkpoint }),
    }),
  }),
});

builder.mutationField("updateCheckpoint", (t) =>
  t.field({
    type: UpdateCheckpointSuccess,
    description: "Creates checkpoint revision n+1 if expectedRevision is the current revision n; otherwise StaleRevisionError.",
    args: { input: t.arg({ type: UpdateCheckpointInput, required: true }) },
    errors: {
      types: [StaleRevisionError, NotFoundError, ValidationError, IneligibleSourceError],
      directResult: true,
      union: { name: "UpdateCheckpointPayload" },
    },
    resolve: async (_root, { input }, ctx) => ({
      checkpoint: await ctx.services.checkpoints.update(ctx.actor, {
        workspaceId: requireIdOfType(String(input.workspaceId), "Workspace", "workspaceId"),
        expectedRevision: input.expectedRevision,
        summary: input.summary,
        nextSteps: input.nextSteps,
        questions: input.questions.map((q) => ({ ...q, id: q.id && questionIdOf(q.id) })),
        sources: (input.sources ?? []).map((id, index) => requireIdOfType(String(id), "PublicationVersion", `sources.${index}`)),
      }),
    }),
  }),
);

/** The questionId inside a CheckpointQuestion id; anything else is taken as a questionId as given. */
function questionIdOf(id: string): string {
  const inRevision = idOfType(id, "CheckpointQuestion");
  return inRevision === null ? id : inRevision.slice(inRevision.lastIndexOf("/") + 1);
}

const ProposalStatusEnum = builder.enumType(CheckpointProposalStatus, {
  name: "CheckpointProposalStatus",
  description:
    "PENDING until the run settles; then ACCEPTED, STALE (the checkpoint moved on), INVALID or DROPPED (the run did not succeed, or a later proposal replaced it).",
});

builder.prismaObject("CheckpointProposal", {
  description: "A checkpoint a run proposed, and what became of it (W11).",
  fields: (t) => ({
    id: t.id({ description: "Names the proposal as `after` in `Run.checkpointProposals`.", resolve: (p) => encodeGlobalId("CheckpointProposal", p.id) }),
    status: t.expose("status", { type: ProposalStatusEnum }),
    reason: t.exposeString("reason", { nullable: true }),
    expectedRevision: t.exposeInt("expectedRevision", { description: "The revision the run saw." }),
    revision: t.exposeInt("revision", { nullable: true, description: "ACCEPTED: the revision it became." }),
    proposal: t.string({ description: "The proposal as the model made it, as JSON.", extensions: largeText(), resolve: (p) => JSON.stringify(p.proposal) }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

builder.prismaObjectFields("Run", (t) => ({
  checkpointProposals: listConnection(t, {
    type: "CheckpointProposal",
    name: "CheckpointProposalConnection",
    description: describePage("The checkpoint proposals the run made, oldest first.", PROPOSALS),
    list: PROPOSALS,
    resolve: (query, run, args, ctx) => readConnection<CheckpointProposal>(ctx.prisma.checkpointProposal, PROPOSALS, args, { scope: { runId: run.id }, query }),
  }),
}));
