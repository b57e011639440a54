// Stopping a run (cancelRun) in its three modes, and what a run shows of a stop: the request, a
// partial answer, an answer concluded early. The rules are the domain's (domain/runs/run-service.ts).
import type { Run } from "../../generated/prisma/client.js";
import { CancelMode, RunStopReason } from "../../generated/prisma/enums.js";
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import { builder } from "../builder.js";
import { requireIdOfType } from "../global-id.js";
import { me } from "./owned.js";
import { RunNode } from "./run.js";

export const CancelModeEnum = builder.enumType(CancelMode, {
  name: "CancelMode",
  description: "How cancelRun stops a run.",
  values: {
    NOW: {
      description:
        "At once: the model request and tool calls in flight are aborted; the text the model had streamed stays as Run.answer (answerComplete false). The run ends CANCELLED. Escalates a pending AFTER_TURN or CONCLUDE stop.",
    },
    AFTER_TURN: {
      description:
        "After the current turn: its tool calls finish and their results are recorded in the log; the run ends CANCELLED before its next model request. A run that answers before then ends as it would have. A queued, paused or waiting run (no turn under way) stops at once as NOW.",
    },
    CONCLUDE: {
      description:
        "Answer now from what was gathered: the tool calls in flight are stopped (recorded as interrupted in the log), then one last model request, offered no tools, asks for the best answer from the evidence so far. The run ends SUCCEEDED with concludedEarly true, and a workspace run publishes the answer like any other. A queued run makes only that request once it starts, a paused one once it is resumed; a run waiting for decisions has its waiting calls rejected and concludes at once.",
    },
  } as const,
});

export const RunStopReasonEnum = builder.enumType(RunStopReason, {
  name: "RunStopReason",
  description: "How a run ended (Run.stopReason): every way a run ends has one.",
  values: {
    ANSWERED: { description: "SUCCEEDED: the model gave its final reply." },
    CONCLUDED: { description: "SUCCEEDED: a CONCLUDE stop (cancelRun) made one last request without tools; concludedEarly true." },
    CANCELLED: { description: "CANCELLED: stopped NOW (cancelRun), or its conversation was interrupted by a new run (multitask INTERRUPT)." },
    STOPPED_AFTER_TURN: { description: "CANCELLED: an AFTER_TURN stop (cancelRun) taken once the turn's tool calls had finished." },
    DEADLINE: { description: "TIMED_OUT: the run reached its deadline (RunLimits.deadlineSeconds), running or waiting for decisions." },
    BUDGET: {
      description:
        "SUCCEEDED: a cost cap stopped the run before a model request — RunLimits.maxCost, the principal's daily cost limit or Workspace.monthlyBudget — or its owner refused to go on past RunLimits.confirmCostAbove. The text it had so far is its answer (answerComplete false); the trace's BUDGET event says which cap, its limit and what was spent.",
    },
    MAX_TURNS: { description: "FAILED: the run used all its turns (RunLimits.maxTurns)." },
    TOKEN_BUDGET: { description: "FAILED: the run used its token budget (RunLimits.tokenBudget)." },
    CONTEXT_OVERFLOW: { description: "FAILED: the next request did not fit the model's context window." },
    MODEL_ERROR: { description: "FAILED: the model's request failed." },
    INTERNAL_ERROR: { description: "FAILED: Dossier itself failed (a bug or the database); the logs say more." },
  },
});

const RunStopRequest = builder.objectRef<Pick<Run, "stopMode" | "stopRequestedAt" | "stopRequestedBy">>("RunStopRequest").implement({
  description: "A stop requested of a run (cancelRun): final once recorded, whether it is pending or was taken.",
  fields: (t) => ({
    mode: t.field({ type: CancelModeEnum, resolve: (stop) => stop.stopMode! }),
    requestedAt: t.field({ type: "DateTime", resolve: (stop) => stop.stopRequestedAt! }),
    requestedBy: t.prismaField({
      type: "Principal",
      nullable: true,
      description: "Who asked: null when that principal is not you (or no longer exists).",
      resolve: (query, stop, _args, ctx) =>
        stop.stopRequestedBy ? ctx.prisma.principal.findFirst({ ...query, where: { id: stop.stopRequestedBy, AND: [me(ctx)] } }) : null,
    }),
  }),
});

builder.prismaObjectFields(RunNode, (t) => ({
  answerComplete: t.boolean({
    description:
      "True when answer holds a complete model reply; false when it holds the text a reply had streamed when the run was stopped NOW — and false when there is no answer at all.",
    select: { answer: true, answerPartial: true },
    resolve: (run) => run.answer !== null && !run.answerPartial,
  }),
  stopReason: t.expose("stopReason", {
    type: RunStopReasonEnum,
    nullable: true,
    description: "How the run ended (RunStopReason); null while it has not ended.",
  }),
  concludedEarly: t.exposeBoolean("concludedEarly", {
    description: "True when the answer came from the one last request a CONCLUDE stop made (cancelRun), without tools; the run then ended SUCCEEDED.",
  }),
  stopRequest: t.field({
    type: RunStopRequest,
    nullable: true,
    description:
      "The stop requested of the run (cancelRun), pending or taken; null when none was. Every stop is final: a later cancelRun does not undo it, and one of another mode answers with this request unchanged — except NOW, which escalates a pending AFTER_TURN or CONCLUDE (the request then shows NOW).",
    select: { stopMode: true, stopRequestedAt: true, stopRequestedBy: true },
    resolve: (run) => (run.stopMode ? run : null),
  }),
}));

const CancelRunInput = builder.inputType("CancelRunInput", {
  fields: (t) => ({
    runId: t.id({ required: true }),
    mode: t.field({ type: CancelModeEnum, defaultValue: "NOW", description: "How the run stops; NOW by default." }),
  }),
});

const CancelRunSuccess = builder.objectRef<{ run: Run }>("CancelRunSuccess").implement({
  fields: (t) => ({ run: t.field({ type: RunNode, resolve: (result) => result.run }) }),
});

builder.mutationField("cancelRun", (t) =>
  t.field({
    type: CancelRunSuccess,
    description:
      "Stops a queued, running, waiting (WAITING) or paused run as `mode` says (CancelMode; NOW by default), recorded as Run.stopRequest and shown live on runEvents and in the trace (a STOP_REQUESTED event on the RUN span). NOW is final at once (CANCELLED); AFTER_TURN and CONCLUDE are taken by the attempt executing the run, on whichever instance. A settled run is returned unchanged.",
    args: { input: t.arg({ type: CancelRunInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError], directResult: true, union: { name: "CancelRunPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      run: await ctx.services.runs.cancelRun(ctx.actor, requireIdOfType(String(input.runId), "Run", "runId"), input.mode ?? "NOW"),
    }),
  }),
);
