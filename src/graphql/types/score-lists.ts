// A target's scores (issue 39): `scores(first, after)` on runs, publication versions, spans and
// checkpoint revisions — newest first, read a page at a time on the score table's (target,
// created_at, id) index — and a run's `scoreSummary`, counted and averaged in SQL.
import { type ScoreSummaryRow, scoreSummary } from "../../domain/research/score-service.js";
import type { Score, ScoreTargetKind } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import type { GraphQLContext } from "../context.js";
import {
  describePage,
  LIST_PAGE,
  type KeysetList,
  listConnection,
  type PageArgs,
  readConnection,
  sharedListConnection,
  LIST_ITEMS,
} from "../list-connection.js";
import { Checkpoint, UnavailableCheckpoint } from "./checkpoint.js";
import { mine } from "./owned.js";
import { ScoreNode } from "./score.js";

const SCORES: KeysetList = {
  typename: "Score",
  order: [
    ["createdAt", "desc"],
    ["id", "desc"],
  ],
  ...LIST_PAGE,
};

const ScoreConnection = sharedListConnection(ScoreNode, "ScoreConnection");

function scoresOf(t: unknown, kind: ScoreTargetKind, what: string, idOf: (parent: never) => string) {
  return listConnection(t, {
    type: "Score",
    name: "ScoreConnection",
    shared: ScoreConnection,
    description: describePage(`The scores of this ${what}, newest first: who judged it, on which config, with what.`, SCORES),
    list: SCORES,
    resolve: (query, parent: never, args: PageArgs, ctx: GraphQLContext) =>
      readConnection<Score>(ctx.prisma.score, SCORES, args, { scope: { targetKind: kind, targetId: idOf(parent), ...mine(ctx) }, query }),
  });
}

builder.prismaObjectFields("Run", (t) => ({
  scores: scoresOf(t, "RUN", "run", (run: { id: string }) => run.id),
  scoreSummary: t.field({
    type: [ScoreSummaryRef],
    extensions: { [LIST_ITEMS]: 200 },
    description:
      "The run's scores per config (by config name): how many, their mean value (null when none has a value: CATEGORICAL), and how many carry each label. Counted in the database, however many scores there are.",
    resolve: (run, _args, ctx) => scoreSummary(ctx.prisma, "RUN", run.id),
  }),
}));

builder.prismaObjectFields("PublicationVersion", (t) => ({
  scores: scoresOf(t, "PUBLICATION_VERSION", "exact version (who judged it)", (v: { id: string }) => v.id),
}));

builder.prismaObjectFields("Span", (t) => ({
  scores: scoresOf(t, "SPAN", "span", (span: { id: string }) => span.id),
}));

for (const ref of [Checkpoint, UnavailableCheckpoint]) {
  builder.objectFields(ref, (t) => ({
    scores: scoresOf(t, "CHECKPOINT_VERSION", "checkpoint revision", (r: { checkpoint: { id: string } }) => r.checkpoint.id),
  }));
}

const LabelCountRef = builder.objectRef<{ label: string; count: number }>("ScoreLabelCount").implement({
  fields: (t) => ({ label: t.exposeString("label"), count: t.exposeInt("count") }),
});

const ScoreSummaryRef = builder.objectRef<ScoreSummaryRow>("ScoreSummary").implement({
  description: "A target's scores on one config.",
  fields: (t) => ({
    configName: t.exposeString("configName"),
    count: t.exposeInt("count"),
    mean: t.exposeFloat("mean", { nullable: true, description: "The mean value: for BOOLEAN the share of true; null for CATEGORICAL." }),
    labelCounts: t.field({
      type: [LabelCountRef],
      extensions: { [LIST_ITEMS]: 50 },
      description: "Each label and how many scores carry it, most frequent first.",
      resolve: (row) => row.labelCounts,
    }),
  }),
});
