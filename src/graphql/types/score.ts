// Scores (issue 39): score configs, scores of runs, publication versions, spans and checkpoint
// versions, and the mutations that make and delete them. The lists of a target's scores and a
// run's summary are in score-lists.ts.
import { ForbiddenError, IdempotencyConflictError, NotFoundError, ValidationError } from "../../domain/errors.js";
import { SCORE_CATEGORIES_MAX, SCORE_COMMENT_MAX, SCORE_CONFIG_NAME_MAX, SCORE_DESCRIPTION_MAX } from "../../domain/research/score-rules.js";
import { TARGET_TYPENAMES } from "../../domain/research/score-service.js";
import type { Score, ScoreConfig } from "../../generated/prisma/client.js";
import { ScoreKind, ScoreSource } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { encodeGlobalId, requireIdOfType } from "../global-id.js";
import { describePage, LIST_PAGE, type KeysetList, listConnection, readConnection } from "../list-connection.js";
import { Checkpoint, UnavailableCheckpoint } from "./checkpoint.js";
import { PublicationVersionNode } from "./publication.js";
import { RunNode } from "./run.js";
import { SpanObject } from "./trace.js";
import { me, mine } from "./owned.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";

const ScoreKindEnum = builder.enumType(ScoreKind, {
  name: "ScoreKind",
  values: {
    NUMERIC: { description: "A number, within [min, max] where a bound is set (either may be open). No label." },
    CATEGORICAL: { description: "A label among the config's categories. No value." },
    BOOLEAN: { description: 'Value 0 or 1, or label "false" or "true" (both if they agree); a score stores both.' },
  },
});

const ScoreSourceEnum = builder.enumType(ScoreSource, {
  name: "ScoreSource",
  values: {
    HUMAN: { description: "A person's judgement. A publication version's HUMAN scores are shown to the runs that list or read it." },
    MODEL: { description: "A model's judgement (an evaluator)." },
    CODE: { description: "A program's check." },
  },
});

export const ScoreConfigNode = builder.prismaNode("ScoreConfig", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, ...mine(ctx) }),
  description: "A named scale scores are checked against; names are unique per principal.",
  fields: (t) => ({
    name: t.exposeString("name"),
    kind: t.expose("kind", { type: ScoreKindEnum }),
    min: t.exposeFloat("min", { nullable: true, description: "NUMERIC: the lowest value allowed; null when open." }),
    max: t.exposeFloat("max", { nullable: true, description: "NUMERIC: the highest value allowed; null when open." }),
    categories: t.exposeStringList("categories", { description: "CATEGORICAL: the labels allowed, in the order given; empty otherwise." }),
    description: t.exposeString("description", { nullable: true }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
  }),
});

/** What a score judges, as the graph shows it: the row, with the type it reads as. */
type Target = { typename: string };

const ScoreTargetUnion = builder.unionType("ScoreTarget", {
  description: "What a score judges: a run, a publication version, a span or a checkpoint revision.",
  types: [RunNode, PublicationVersionNode, SpanObject, Checkpoint, UnavailableCheckpoint],
  resolveType: (target) => (target as unknown as Target).typename,
});

export const ScoreNode = builder.prismaNode("Score", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, ...mine(ctx) }),
  description: "One judgement of a run, a publication version, a span or a checkpoint revision, on one of your score configs.",
  fields: (t) => ({
    config: t.relation("config"),
    configName: t.string({ select: { config: { select: { name: true } } }, resolve: (score) => score.config.name }),
    value: t.exposeFloat("value", { nullable: true, description: "NUMERIC: the value; BOOLEAN: 1 or 0; CATEGORICAL: null." }),
    label: t.exposeString("label", { nullable: true, description: 'CATEGORICAL: the category; BOOLEAN: "true" or "false"; NUMERIC: null.' }),
    comment: t.exposeString("comment", { nullable: true }),
    source: t.expose("source", { type: ScoreSourceEnum }),
    createdAt: t.expose("createdAt", { type: "DateTime" }),
    createdBy: t.prismaField({
      type: "Principal",
      description: "Who scored.",
      resolve: async (query, score, _args, ctx) => ctx.prisma.principal.findFirstOrThrow({ ...query, where: { id: score.createdById, AND: [me(ctx)] } }),
    }),
    credential: t.exposeString("credential", {
      nullable: true,
      description: 'The credential that scored: "key:<API key id>", "token:<access token id>" or "sign-in:<principal id>"; null for the development principal.',
    }),
    targetId: t.id({
      description: "The global id of what the score judges.",
      resolve: (score) => encodeGlobalId(TARGET_TYPENAMES[score.targetKind], score.targetId),
    }),
    target: t.field({
      type: ScoreTargetUnion,
      nullable: true,
      description: "What the score judges; null once it is gone (a deleted workspace's checkpoint revision).",
      resolve: async (score, _args, ctx) => {
        const typename = TARGET_TYPENAMES[score.targetKind];
        const id = score.targetId;
        const owner = ctx.actor.principalId;
        // The row as its own type's resolvers read it, and the type it reads as.
        const tag = (row: object | null, as = typename) => (row ? ({ ...row, typename: as } as never) : null);
        switch (score.targetKind) {
          case "RUN":
            return tag(await ctx.prisma.run.findFirst({ where: { id, ownerId: owner } }));
          case "PUBLICATION_VERSION":
            return tag(await ctx.prisma.publicationVersion.findFirst({ where: { id, publication: { ownerId: owner } } }));
          case "SPAN":
            return tag(await ctx.prisma.span.findFirst({ where: { id, trace: { run: { ownerId: owner } } } }));
          case "CHECKPOINT_VERSION": {
            const checkpoint = await ctx.prisma.checkpointVersion.findFirst({ where: { id, workspace: { ownerId: owner, deletedAt: null } } });
            if (!checkpoint) return null;
            const [read] = await ctx.services.checkpoints.withAvailability([checkpoint], ctx.actor);
            return tag(read!, read!.status === "AVAILABLE" ? "Checkpoint" : "UnavailableCheckpoint");
          }
        }
      },
    }),
  }),
});

const CONFIGS: KeysetList = {
  typename: "ScoreConfig",
  order: [
    ["createdAt", "desc"],
    ["id", "desc"],
  ],
  ...LIST_PAGE,
};

builder.queryFields((t) => ({
  scoreConfigs: listConnection(t, {
    type: "ScoreConfig",
    name: "ScoreConfigConnection",
    description: describePage("Your score configs, newest first.", CONFIGS),
    list: CONFIGS,
    resolve: (query, _root, args, ctx) => readConnection<ScoreConfig>(ctx.prisma.scoreConfig, CONFIGS, args, { scope: mine(ctx), query }),
  }),
}));

const CreateScoreConfigInput = builder.inputType("CreateScoreConfigInput", {
  fields: (t) => ({
    name: t.string({ required: true, description: `1–${SCORE_CONFIG_NAME_MAX} characters, unique among your configs.` }),
    kind: t.field({ type: ScoreKindEnum, required: true }),
    min: t.float({ description: "NUMERIC only: the lowest value allowed (omit for no bound); less than max." }),
    max: t.float({ description: "NUMERIC only: the highest value allowed (omit for no bound)." }),
    categories: t.stringList({ description: `CATEGORICAL only, and required: 1–${SCORE_CATEGORIES_MAX} distinct non-empty labels.` }),
    description: t.string({ description: `What the scale means to the people using it (at most ${groupedDigits(SCORE_DESCRIPTION_MAX)} characters).` }),
  }),
});

const CreateScoreConfigSuccess = builder.objectRef<{ config: ScoreConfig }>("CreateScoreConfigSuccess").implement({
  fields: (t) => ({ config: t.field({ type: ScoreConfigNode, resolve: (result) => result.config }) }),
});

builder.mutationField("createScoreConfig", (t) =>
  t.field({
    type: CreateScoreConfigSuccess,
    description:
      "Creates a score config. Idempotent: a config of that name with exactly these settings is returned as it is; one with other settings is a ValidationError on `name` (configs never change, so scores made under one keep their meaning).",
    args: { input: t.arg({ type: CreateScoreConfigInput, required: true }) },
    errors: { types: [ForbiddenError, ValidationError], directResult: true, union: { name: "CreateScoreConfigPayload" } },
    resolve: async (_root, { input }, ctx) => ({ config: await ctx.services.scores.createConfig(ctx.actor, input) }),
  }),
);

const CreateScoreInput = builder.inputType("CreateScoreInput", {
  fields: (t) => ({
    targetId: t.id({ required: true, description: "A Run, PublicationVersion, Span or CheckpointVersion (a checkpoint revision's id) of yours." }),
    configName: t.string({ required: true, description: "The name of one of your score configs; the value is checked against it." }),
    value: t.float({ description: "NUMERIC: required; BOOLEAN: 0 or 1 (or send label); CATEGORICAL: not allowed." }),
    label: t.string({ description: 'CATEGORICAL: required, one of the categories; BOOLEAN: "true" or "false" (or send value); NUMERIC: not allowed.' }),
    comment: t.string({ description: `Why (at most ${groupedDigits(SCORE_COMMENT_MAX)} characters).` }),
    source: t.field({ type: ScoreSourceEnum, required: true }),
    idempotencyKey: t.string({
      description:
        "Sent again with the same request, returns the score it made (one score, however often it is retried); with a different request it is an IdempotencyConflictError. Unique per principal while the score exists; an access token's keys are its grants' own (another end user's token may use the same key).",
    }),
  }),
});

const CreateScoreSuccess = builder.objectRef<{ score: Score }>("CreateScoreSuccess").implement({
  fields: (t) => ({ score: t.field({ type: ScoreNode, resolve: (result) => result.score }) }),
});

builder.mutationField("createScore", (t) =>
  t.field({
    type: CreateScoreSuccess,
    description:
      "Scores one of your runs, publication versions, spans or checkpoint revisions. Another principal's object, or an unknown config, is NotFoundError; a value the config does not allow is a ValidationError naming the field. Your webhooks hear SCORE_CREATED.",
    args: { input: t.arg({ type: CreateScoreInput, required: true }) },
    errors: { types: [ForbiddenError, IdempotencyConflictError, NotFoundError, ValidationError], directResult: true, union: { name: "CreateScorePayload" } },
    resolve: async (_root, { input }, ctx) => ({
      score: await ctx.services.scores.create(ctx.actor, { ...input, targetId: String(input.targetId) }),
    }),
  }),
);

const DeleteScoreInput = builder.inputType("DeleteScoreInput", { fields: (t) => ({ id: t.id({ required: true }) }) });

const DeleteScoreSuccess = builder.objectRef<{ id: string }>("DeleteScoreSuccess").implement({
  fields: (t) => ({ deletedScoreId: t.id({ description: "The id of the score deleted.", resolve: (result) => result.id }) }),
});

builder.mutationField("deleteScore", (t) =>
  t.field({
    type: DeleteScoreSuccess,
    description:
      "Deletes one of your scores; any other id is NotFoundError. An access token deletes only the scores it made (credential `token:<its id>`): the others, a person's HUMAN scores included, are NotFoundError to it. Its idempotency key may be used again.",
    args: { input: t.arg({ type: DeleteScoreInput, required: true }) },
    errors: { types: [ForbiddenError, NotFoundError, ValidationError], directResult: true, union: { name: "DeleteScorePayload" } },
    resolve: async (_root, { input }, ctx) => {
      const id = requireIdOfType(String(input.id), "Score", "id");
      await ctx.services.scores.delete(ctx.actor, id);
      return { id: encodeGlobalId("Score", id) };
    },
  }),
);
