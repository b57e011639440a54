// traceUpdates: a run's trace as a live, resumable stream (T2, T3), over graphql-ws and SSE.
import { GraphQLError } from "graphql";
import { type TraceUpdate, traceUpdates } from "../../trace/updates/trace-updates.js";
import { eventOfUpdate, spanOfUpdate } from "../../trace/updates/update-reads.js";
import { parseAfterSeq, SEQ_TYPE_NOTE } from "../sequence.js";
import { builder } from "../builder.js";
import { idOfType } from "../global-id.js";
import { SpanEventObject, SpanObject } from "./trace.js";
import { RetentionModeEnum } from "./trace-retention.js";

const TraceUpdateKind = builder.enumType("TraceUpdateKind", {
  values: {
    SPAN_STARTED: { description: "A span started; it is visible while it runs." },
    SPAN_UPDATED: { description: "A running span's attributes or usage changed." },
    SPAN_ENDED: { description: "A span ended with its status." },
    EVENT_APPENDED: { description: "An event was added to a span; `event` carries its preview." },
    TRACE_ENDED: { description: "The run settled; the stream completes after this update." },
    RESYNC_REQUIRED: {
      description: "You fell too far behind: re-read the trace (run.trace) and subscribe again with afterSeq from it.",
    },
    TRACE_EXPIRED: {
      description:
        "The trace expired under its retention policy (README: Trace retention): `at` is when, `expiredMode` what it kept; the stream completes after this update, the first and only one a subscription to an expired trace gets.",
    },
  } satisfies Record<TraceUpdate["type"], unknown>,
});

const TraceUpdateRef = builder.objectRef<TraceUpdate>("TraceUpdate").implement({
  description: "One change to a trace, in the trace's sequence order.",
  fields: (t) => ({
    seq: t.string({
      description: `The trace's monotonic sequence number; pass the last one you saw as afterSeq to resume. ${SEQ_TYPE_NOTE}`,
      resolve: (update) => String(update.seq),
    }),
    kind: t.field({ type: TraceUpdateKind, resolve: (update) => update.type }),
    at: t.field({ type: "DateTime", resolve: (update) => update.at }),
    span: t.field({
      type: SpanObject,
      nullable: true,
      description:
        "The span as it was after this update, also when the update is replayed later (its status, times, attributes and usage then). " +
        "For EVENT_APPENDED, the span the event was added to, as it is when the update is read (an event changes no span). " +
        "Null for TRACE_ENDED. (Updates recorded before Dossier kept a span's state with its update show the span as it is now.)",
      resolve: (update, _args, ctx) => spanOfUpdate(update, ctx.prisma),
    }),
    expiredMode: t.field({
      type: RetentionModeEnum,
      nullable: true,
      description: "TRACE_EXPIRED: what expiry kept of the trace (run.trace answers TraceExpiredError). Null for the other kinds.",
      resolve: (update) => (update.type === "TRACE_EXPIRED" ? update.mode : null),
    }),
    event: t.field({
      type: SpanEventObject,
      nullable: true,
      description: "For EVENT_APPENDED: the event, with its preview.",
      resolve: (update, _args, ctx) => eventOfUpdate(update, ctx.prisma),
    }),
  }),
});

builder.subscriptionField("traceUpdates", (t) =>
  t.field({
    type: TraceUpdateRef,
    description:
      "A run's span and event updates: first every change after `afterSeq` (all of them without it), then live ones. " +
      "Completes after TRACE_ENDED, after RESYNC_REQUIRED when the subscriber falls too far behind, or at once with TRACE_EXPIRED when the trace expired. " +
      "A subscriber whose server lost its link to the other instances for a while (Redis failing over) is not ended: what was recorded meanwhile is read from the trace, each change once, up to TRACE_ENDED.",
    args: {
      runId: t.arg.id({ required: true }),
      afterSeq: t.arg.string({
        description: `A seq from an earlier update, or Trace.lastSeq (a runOutput position counts as its trace position). ${SEQ_TYPE_NOTE}`,
      }),
    },
    subscribe: async (_root, args, ctx) => {
      const runId = idOfType(String(args.runId), "Run");
      const visible = runId ? await ctx.prisma.run.count({ where: { id: runId, ownerId: ctx.actor.principalId } }) : 0;
      if (!runId || visible === 0) throw new GraphQLError("Run not found.", { extensions: { code: "NOT_FOUND" } });
      const afterSeq = parseAfterSeq(args.afterSeq).seq;
      return traceUpdates({
        prisma: ctx.prisma,
        events: ctx.events,
        traceId: runId,
        afterSeq,
        bufferLimit: ctx.settings.traceSubscriberBuffer,
      });
    },
    resolve: (update) => update,
  }),
);
