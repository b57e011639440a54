// A run's attempts (R18): each claim of the run by a worker, Run.attempt and Run.attempts.
import type { Prisma, Run } from "../../generated/prisma/client.js";
import { RunAttemptOutcome } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { boundedCount } from "../counted-connection.js";
import { encodeGlobalId } from "../global-id.js";
import { connectionOf, describePage, type KeysetList, LIST_PAGE, listConnection, pageOf } from "../list-connection.js";
import { RunNode } from "./run.js";

const ATTEMPTS: KeysetList = { typename: "RunAttempt", order: [["number", "asc"]], ...LIST_PAGE };

/** An attempt's global id: it has no id of its own, only its run and its number. */
const attemptId = (attempt: { runId: string; number: number }) => encodeGlobalId("RunAttempt", `${attempt.runId}/${attempt.number}`);

builder.prismaObjectFields(RunNode, (t) => ({
  attempt: t.exposeInt("attempt", { description: "The current attempt's number: 0 before the run was first claimed, then 1, 2, … for each claim (R18)." }),
  attempts: listConnection<Run>(t, {
    type: "RunAttempt",
    name: "RunAttemptConnection",
    list: ATTEMPTS,
    cursorSelect: { runId: true, number: true },
    description: describePage("Every claim of the run by a worker, by number. Only the latest can be running; no two overlap.", ATTEMPTS),
    resolve: async (query, run, args, ctx) => {
      const page = await pageOf<Prisma.RunAttemptWhereInput>(ATTEMPTS, args, (id, select) => {
        const [runId, number] = id.split("/");
        return runId === run.id && /^\d+$/.test(number ?? "")
          ? ctx.prisma.runAttempt.findUnique({ where: { runId_number: { runId, number: Number(number) } }, select })
          : Promise.resolve(null);
      });
      const rows = await ctx.prisma.runAttempt.findMany({ ...query, where: { runId: run.id, ...page.where }, orderBy: page.orderBy, take: page.take + 1 });
      return connectionOf(rows, page, args, attemptId, () => boundedCount(ctx.prisma.runAttempt, { runId: run.id }));
    },
  }),
}));

const RunAttemptOutcomeEnum = builder.enumType(RunAttemptOutcome, {
  name: "RunAttemptOutcome",
  values: {
    COMPLETED: { description: "The run reached a terminal state during the attempt (a cancellation it saw included)." },
    HANDED_BACK: {
      description:
        "The worker stopped gracefully and released the run for another attempt, or the run began to wait for decisions on its tool calls (WAITING; the attempt's span ended OK).",
    },
    LEASE_LOST: {
      description: "Its instance stopped renewing the lease while still connected (frozen, or cut off from the database); another attempt took over.",
    },
    CRASHED: { description: "Its instance had no database session left when another attempt took the run over: the process died." },
  },
});

builder.prismaObject("RunAttempt", {
  description: "One claim of a run by a worker instance. Every write of an attempt applies only while it holds the run.",
  fields: (t) => ({
    id: t.id({ description: "Names the attempt as `after` in `Run.attempts`.", resolve: attemptId }),
    number: t.exposeInt("number", { description: "1 for the first claim." }),
    instance: t.exposeString("instance", { description: 'The worker instance that ran it, e.g. "host:4242:a1b2c3".' }),
    startedAt: t.expose("startedAt", { type: "DateTime" }),
    endedAt: t.expose("endedAt", { type: "DateTime", nullable: true, description: "Null while the attempt holds the run." }),
    outcome: t.expose("outcome", { type: RunAttemptOutcomeEnum, nullable: true, description: "How it ended; null while it holds the run." }),
    span: t.prismaField({
      type: "Span",
      nullable: true,
      description: "The attempt's ATTEMPT span, under the run's RUN span.",
      resolve: (query, attempt, _args, ctx) => (attempt.spanId ? ctx.prisma.span.findUnique({ ...query, where: { id: attempt.spanId } }) : null),
    }),
  }),
});
