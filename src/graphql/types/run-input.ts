// Steering a run in flight (issue 38): steerRun, the RunInput it stores, and Run.inputs.
import { IdempotencyConflictError, NotFoundError, RunEndedError, ValidationError } from "../../domain/errors.js";
import { STEER_TEXT_MAX } from "../../domain/runs/steering.js";
import type { Run, RunInput } from "../../generated/prisma/client.js";
import { RunInputStatus } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { requireIdOfType } from "../global-id.js";
import { largeText } from "../large-text.js";
import { describePage, type KeysetList, LIST_PAGE, listConnection, readConnection } from "../list-connection.js";
import { ErrorInterface } from "./errors.js";
import { ofMyRun } from "./owned.js";
import { RunNode } from "./run.js";
import { RunStatusEnum } from "./run-filter.js";

const INPUTS: KeysetList = {
  typename: "RunInput",
  order: [
    ["createdAt", "asc"],
    ["id", "asc"],
  ],
  ...LIST_PAGE,
};

const RunInputStatusEnum = builder.enumType(RunInputStatus, {
  name: "RunInputStatus",
  values: {
    PENDING: { description: "Stored; it enters the conversation's log right before the run's next model request." },
    DELIVERED: { description: "In the log (`message`), right before the model request that read it; `deliveredAt` says when." },
    RELEASED: {
      description: "The run ended before another model request, so the text never entered the log: send it as the conversation's next run.",
    },
  },
});

export const RunInputNode = builder.prismaNode("RunInput", {
  id: { field: "id" },
  nullable: true,
  findUnique: (id, ctx) => ({ id, ...ofMyRun(ctx) }),
  description:
    "A person's message to a run in flight (steerRun). It enters the conversation's log exactly once, as a USER message right before the run's next model request — across takeovers by another worker too — or is RELEASED when the run ends first.",
  fields: (t) => ({
    text: t.exposeString("text", { extensions: largeText(STEER_TEXT_MAX) }),
    status: t.expose("status", { type: RunInputStatusEnum }),
    createdAt: t.expose("createdAt", { type: "DateTime", description: "When steerRun stored it." }),
    deliveredAt: t.expose("deliveredAt", {
      type: "DateTime",
      nullable: true,
      description: "When it entered the log (DELIVERED); null before and if RELEASED.",
    }),
    releasedAt: t.expose("releasedAt", { type: "DateTime", nullable: true, description: "When the run's end released it (RELEASED)." }),
    message: t.relation("message", { nullable: true, description: "The USER entry of the log that carries it, once DELIVERED." }),
    run: t.relation("run"),
  }),
});

builder.prismaObjectFields(RunNode, (t) => ({
  inputs: listConnection<Run>(t, {
    type: "RunInput",
    name: "RunInputConnection",
    list: INPUTS,
    description: describePage("The steering inputs sent to the run (steerRun), oldest first.", INPUTS),
    resolve: (query, run, args, ctx) => readConnection<RunInput>(ctx.prisma.runInput, INPUTS, args, { scope: { runId: run.id }, query }),
  }),
}));

builder.objectType(RunEndedError, {
  name: "RunEndedError",
  description:
    "The run has ended (SUCCEEDED, FAILED, CANCELLED or TIMED_OUT): it takes no more input (nothing was stored; send the text as a new run) and can be neither paused nor resumed. `status` says how it ended.",
  interfaces: [ErrorInterface],
  fields: (t) => ({
    run: t.field({ type: RunNode, resolve: (error) => error.run as Run }),
    status: t.field({ type: RunStatusEnum, resolve: (error) => error.run.status }),
  }),
});

const SteerRunInput = builder.inputType("SteerRunInput", {
  fields: (t) => ({
    runId: t.id({ required: true }),
    text: t.string({ required: true, description: `What you want the run to take into account: a person's message, at most ${STEER_TEXT_MAX} characters.` }),
    idempotencyKey: t.string({
      description:
        "Retrying with the same key on the same run returns the same input (with another text: IdempotencyConflictError). An access token's keys are its grants' own (another end user's token on the run may use the same key).",
    }),
  }),
});

const SteerRunSuccess = builder.objectRef<{ input: RunInput }>("SteerRunSuccess").implement({
  fields: (t) => ({ input: t.field({ type: RunInputNode, nullable: false, resolve: (result) => result.input }) }),
});

builder.mutationField("steerRun", (t) =>
  t.field({
    type: SteerRunSuccess,
    description:
      "Sends a message to a queued, running or waiting run without stopping it. The text is stored at once (PENDING) and enters the conversation's log exactly once, as a USER message right before the run's next model request (a queued run's first; a waiting run's once its calls are decided); a STEERED event on that turn's span marks it. " +
      "If the run ends before another model request, the input is RELEASED instead. A key or token needs ADMIT (on the run, its conversation or its workspace), the right to add a person's message to the conversation. " +
      "An access token steers only a run an access token admitted that reads no more than it may: every workspace the run may read, the token may READ (its own runs, and those of the token its page had before). Any other run — an API key's reads every publication of yours — is a ForbiddenError, and nothing is stored.",
    args: { input: t.arg({ type: SteerRunInput, required: true }) },
    errors: { types: [NotFoundError, ValidationError, RunEndedError, IdempotencyConflictError], directResult: true, union: { name: "SteerRunPayload" } },
    resolve: async (_root, { input }, ctx) => ({
      input: await ctx.services.steering.steerRun(ctx.actor, {
        runId: requireIdOfType(String(input.runId), "Run", "runId"),
        text: input.text,
        idempotencyKey: input.idempotencyKey,
      }),
    }),
  }),
);
