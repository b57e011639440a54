// A run's status changes as a subscription (runEvents): live, and finished once the run is.
import { GraphQLError } from "graphql";
import { Repeater } from "graphql-yoga";
import { type EventBus, MissedEventsError, type RunStatusMessage } from "../../events/topics.js";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { idOfType } from "../global-id.js";
import { RunStatusEnum } from "./run-filter.js";
import { CancelModeEnum } from "./run-stop.js";
import { MoneyRef, usd } from "./money.js";
import { mine } from "./owned.js";
import { isTerminal } from "../../domain/runs/stop-reasons.js";

/**
 * The run's cost and whether a call of it had no price, read once per event delivered: the two
 * fields of one event share one read of the run row (per subscriber, as each delivers the event).
 */
const costsRead = new WeakMap<object, WeakMap<RunStatusMessage, Promise<{ cost: Prisma.Decimal; costUnpriced: boolean }>>>();
function costsOf(event: RunStatusMessage, ctx: { prisma: PrismaClient }) {
  let ofContext = costsRead.get(ctx);
  if (!ofContext) costsRead.set(ctx, (ofContext = new WeakMap()));
  let read = ofContext.get(event);
  if (!read) {
    read = ctx.prisma.run.findUniqueOrThrow({ where: { id: event.runId }, select: { cost: true, costUnpriced: true } });
    ofContext.set(event, read);
  }
  return read;
}

const RunStatusEvent = builder.objectRef<RunStatusMessage>("RunStatusEvent").implement({
  fields: (t) => ({
    status: t.field({ type: RunStatusEnum, resolve: (event) => event.status }),
    at: t.field({ type: "DateTime", resolve: (event) => event.at }),
    stop: t.field({
      type: CancelModeEnum,
      nullable: true,
      description:
        "The mode of a stop requested by this event (cancelRun: AFTER_TURN or CONCLUDE, the status unchanged or RUNNING again); null for a change of status. Run.stopRequest has the request.",
      resolve: (event) => event.stop ?? null,
    }),
    cost: t.field({
      type: MoneyRef,
      description:
        "What the run has cost so far (Run.cost, USD), read as the event is delivered: on the terminal event, what the run cost in all. Each model call's own cost arrives live as its span ends in traceUpdates (Span.cost).",
      resolve: async (event, _args, ctx) => usd((await costsOf(event, ctx)).cost),
    }),
    costUnpriced: t.boolean({
      description: "A model call of the run so far had no price (Run.costUnpriced): `cost` leaves it out.",
      resolve: async (event, _args, ctx) => (await costsOf(event, ctx)).costUnpriced,
    }),
    run: t.prismaField({
      type: "Run",
      resolve: (query, event, _args, ctx) => ctx.prisma.run.findUniqueOrThrow({ ...query, where: { id: event.runId } }),
    }),
  }),
});

/**
 * A run's status, first as it is now, then each change, ending after its terminal status so that
 * no subscriber waits forever on a settled run. It listens before it reads the run: a change made
 * between the read and the subscription would otherwise be missed. A change to the status last
 * sent (the one just read arriving late, or a repeated announcement) is not sent again. A
 * subscriber that fell too far behind, or that may have missed changes while the bus's link to
 * the other instances was lost (the bus ended its listening: MissedEventsError), listens again
 * and reads the run again: it skips to the status as it is then. A Repeater rather
 * than an async generator, so that a subscriber who leaves while the run is idle releases its
 * listener at once.
 */
function runStatusEvents(prisma: PrismaClient, events: EventBus, runId: string): Repeater<RunStatusMessage> {
  return new Repeater(async (push, stop) => {
    let live: AsyncIterator<RunStatusMessage> | undefined;
    void stop.then(() => live?.return?.());
    let sent: RunStatusMessage["status"] | undefined;
    try {
      for (;;) {
        live = events.subscribe("run:status", runId)[Symbol.asyncIterator]();
        // The first next() is what starts the listener; it waits while the run is read.
        let next = live.next();
        const run = await prisma.run.findUnique({ where: { id: runId }, select: { status: true, finishedAt: true, startedAt: true, createdAt: true } });
        if (!run) return;
        if (run.status !== sent) {
          sent = run.status;
          await push({ runId, status: run.status, at: (run.finishedAt ?? run.startedAt ?? run.createdAt).toISOString() });
        }
        if (isTerminal(run.status)) return;
        try {
          for (let change = await next; !change.done; change = await next) {
            // A stop request is news even when the status stays the same.
            if (change.value.status !== sent || change.value.stop) {
              sent = change.value.status;
              await push(change.value);
              if (isTerminal(sent)) return;
            }
            next = live.next();
          }
          return;
        } catch (error) {
          if (!(error instanceof MissedEventsError)) throw error;
        }
      }
    } finally {
      stop();
    }
  });
}

builder.subscriptionField("runEvents", (t) =>
  t.field({
    type: RunStatusEvent,
    description:
      "One run's status: first its current status, then each change as it happens, never the same status twice in a row unless the event announces a stop request (`stop`, cancelRun) — WAITING while a tool call waits for your decision (Run.pendingApprovals), RUNNING again once decided. " +
      "Completes right after the run's terminal status (SUCCEEDED, FAILED, CANCELLED, TIMED_OUT); on a run that has already settled it delivers that status once and completes. " +
      "A subscriber that falls too far behind (stops reading while changes keep coming), or whose server lost its link to the other instances for a while (Redis failing over), skips the changes it was not kept and goes on from the run's status as it is then.",
    args: { runId: t.arg.id({ required: true }) },
    subscribe: async (_root, args, ctx) => {
      const id = idOfType(String(args.runId), "Run");
      const visible = id ? await ctx.prisma.run.count({ where: { id, ...mine(ctx) } }) : 0;
      if (!id || visible === 0) throw new GraphQLError("Run not found.", { extensions: { code: "NOT_FOUND" } });
      return runStatusEvents(ctx.prisma, ctx.events, id);
    },
    resolve: (event) => event,
  }),
);
