// runsChanged: a live run list (issue 39) — the changes of the caller's runs as they enter,
// change in or leave a RunFilter, resumable with afterSeq (domain/runs/run-list-updates.ts).
import { type RunListUpdate, type RunListUpdateKind, runListUpdates, type RunPlacement } from "../../domain/runs/run-list-updates.js";
import { runsGranted } from "../granted-nodes.js";
import { builder } from "../builder.js";
import { parseAfterSeq, SEQ_TYPE_NOTE } from "../sequence.js";
import { RunFilterInput, runFilterFromInput } from "./run-filter.js";
import { untilLeft } from "./run-output.js";

const RunListUpdateKindEnum = builder.enumType("RunListUpdateKind", {
  description: "What a change does to a filtered run list.",
  values: {
    ADDED: {
      description:
        "The run entered the list: admitted into it, or changed so that it now matches the filter (e.g. it started RUNNING, or its cost went above costAbove).",
    },
    UPDATED: {
      description:
        "A run in the list changed and is still in it (its status within the filter, tokens used, cost, tags, metadata). A running run's cost changes at each model call: a list shown by COST_DESC moves the run to its new place (Run.cost) rather than reading the list again.",
    },
    REMOVED: { description: "The run left the list: it changed so that it no longer matches the filter (e.g. it ended)." },
    RESYNC_REQUIRED: {
      description:
        "You fell further behind than Dossier keeps (the latest 10,000 changes of your runs): re-read the list (runs(filter)), then subscribe again with afterSeq set to this update's seq. The stream completes after it.",
    },
  } satisfies Record<RunListUpdateKind, unknown>,
});

const RunListUpdateRef = builder.objectRef<RunListUpdate>("RunListUpdate").implement({
  description: "One change of a filtered run list, in the order your runs' changes were committed.",
  fields: (t) => ({
    seq: t.string({
      description: `Your run list's position after this change (one sequence for all your runs, whatever the filter): pass the last one you saw as afterSeq to resume. ${SEQ_TYPE_NOTE}`,
      resolve: (update) => String(update.seq),
    }),
    kind: t.field({ type: RunListUpdateKindEnum, resolve: (update) => update.kind }),
    at: t.field({ type: "DateTime", description: "When the change was committed.", resolve: (update) => update.at }),
    run: t.prismaField({
      type: "Run",
      nullable: true,
      description:
        "The run as it is when the update is delivered (also when replayed: apply updates by run id, they are idempotent). Null for RESYNC_REQUIRED.",
      resolve: (query, update, _args, ctx) => (update.runId === null ? null : ctx.prisma.run.findUnique({ ...query, where: { id: update.runId } })),
    }),
  }),
});

builder.subscriptionField("runsChanged", (t) =>
  t.field({
    type: RunListUpdateRef,
    description:
      "A live run list: each change of your runs that adds a run to the list the filter selects, updates a run in it, or removes one from it — e.g. with status: [RUNNING], ADDED when a run starts, UPDATED while it uses tokens or is tagged, REMOVED when it waits or ends. " +
      "First the changes after afterSeq (none without it: live from now on — subscribe, then read runs(filter), and apply updates by run id), then live ones, across instances. " +
      "An access token sees only the runs it may subscribe to (its workspaces, conversations and runs, and the runs and conversations linked to a workspace it may subscribe to). Completes after RESYNC_REQUIRED.",
    args: {
      filter: t.arg({ type: RunFilterInput }),
      afterSeq: t.arg.string({ description: `The seq of the last RunListUpdate you applied. ${SEQ_TYPE_NOTE}` }),
    },
    subscribe: (_root, args, ctx) => {
      const filter = runFilterFromInput(args.filter);
      const afterSeq = args.afterSeq == null ? null : parseAfterSeq(args.afterSeq).seq;
      const access = ctx.actor.access;
      // An access token's: the runs it may subscribe to, granted or linked to a workspace it may subscribe to.
      const visible =
        filter === "matches-nothing"
          ? async () => new Set<string>()
          : access
            ? (runs: RunPlacement[]) => runsGranted(access, ["SUBSCRIBE"], runs, ctx.prisma, ctx.actor.principalId)
            : undefined;
      return untilLeft((signal) =>
        runListUpdates({
          prisma: ctx.prisma,
          events: ctx.events,
          principalId: ctx.actor.principalId,
          filter: filter === "matches-nothing" ? {} : filter,
          visible,
          afterSeq,
          signal,
        }),
      );
    },
    resolve: (update) => update,
  }),
);
