// Pausing and resuming runs (issue 38): pauseRun, resumeRun and what a run shows of a pause.
import { NotFoundError, QueueFullError, RunEndedError } from "../../domain/errors.js";
import type { Run } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { requireIdOfType } from "../global-id.js";
import { RunNode } from "./run.js";

// RunEndedError (its run and status) is defined with steerRun, which answers it too.
builder.prismaObjectFields(RunNode, (t) => ({
  pauseRequestedAt: t.field({
    type: "DateTime",
    nullable: true,
    description:
      "When pauseRun asked this RUNNING run to pause; it pauses at its next safe point, the end of its current turn (its model request and tool calls over, their results logged). Null otherwise.",
    select: { pauseRequestedAt: true, status: true },
    resolve: (run) => (run.status === "RUNNING" ? run.pauseRequestedAt : null),
  }),
  pausedAt: t.expose("pausedAt", {
    type: "DateTime",
    nullable: true,
    description: "When the run paused; null unless it is PAUSED. Resuming moves deadlineAt on by the time since.",
  }),
}));

const RunIdInput = (name: string) => builder.inputType(name, { fields: (t) => ({ runId: t.id({ required: true }) }) });

const PauseRunSuccess = builder.objectRef<{ run: Run }>("PauseRunSuccess").implement({
  fields: (t) => ({ run: t.field({ type: RunNode, resolve: (result) => result.run }) }),
});

const ResumeRunSuccess = builder.objectRef<{ run: Run }>("ResumeRunSuccess").implement({
  fields: (t) => ({ run: t.field({ type: RunNode, resolve: (result) => result.run }) }),
});

builder.mutationField("pauseRun", (t) =>
  t.field({
    type: PauseRunSuccess,
    description:
      "Pauses a run without losing its work. A QUEUED or WAITING run is PAUSED at once (decisions on its tool calls are still taken, and used once it resumes). A RUNNING run is asked to pause (Run.pauseRequestedAt): it finishes its current turn — the model request in flight and the tool calls it asks for, never stopped mid-call — records their results, and is PAUSED before its next model request, its worker free for other runs. A paused run keeps its conversation (admission treats it as active), its time limit stands still, and cancelRun still cancels it. A run already paused is returned as it is.",
    args: { input: t.arg({ type: RunIdInput("PauseRunInput"), required: true }) },
    errors: { types: [NotFoundError, RunEndedError], directResult: true, union: { name: "PauseRunPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      run: await ctx.services.pauses.pauseRun(ctx.actor, requireIdOfType(String(input.runId), "Run", "runId")),
    }),
  }),
);

builder.mutationField("resumeRun", (t) =>
  t.field({
    type: ResumeRunSuccess,
    description:
      "Resumes a PAUSED run: QUEUED again for any worker, which goes on from the conversation's log where the run paused (or WAITING again, while some of its tool calls still wait for a decision). Its deadline moves on by the time it was paused. On a RUNNING run whose pause is still pending, withdraws the pause; any other run that has not ended is returned as it is. A QueueFullError, the run still PAUSED, says you already have as many runs QUEUED as one principal may.",
    args: { input: t.arg({ type: RunIdInput("ResumeRunInput"), required: true }) },
    errors: { types: [NotFoundError, RunEndedError, QueueFullError], directResult: true, union: { name: "ResumeRunPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      run: await ctx.services.pauses.resumeRun(ctx.actor, requireIdOfType(String(input.runId), "Run", "runId")),
    }),
  }),
);
