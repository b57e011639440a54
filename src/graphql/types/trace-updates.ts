// traceUpdates: a run's trace as a live, resumable stream (T2, T3), over graphql-ws and SSE.
import { GraphQLError } from "graphql";
import { type TraceUpdate, traceUpdates } from "../../trace/updates/trace-updates.js";
import type { SpanState } from "../../events/topics.js";
import type { PrismaClient, Span, SpanKind, SpanStatus } from "../../generated/prisma/client.js";
import { builder } from "../builder.js";
import { idOfType } from "../global-id.js";
import { SpanEventObject, SpanObject } from "./trace.js";

/** Reads shared by the subscribers of one update for a few seconds, bounded in count. */
class SnapshotCache {
  private readonly entries = new Map<string, { expires: number; value: Promise<unknown> }>();
  constructor(
    private readonly ttlMs = 5_000,
    private readonly max = 2_000,
  ) {}

  read<T>(key: string, load: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.expires > now) return hit.value as Promise<T>;
    const value = load();
    this.entries.set(key, { expires: now + this.ttlMs, value });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }
}

const caches = new WeakMap<PrismaClient, SnapshotCache>();
function snapshots(prisma: PrismaClient): SnapshotCache {
  let cache = caches.get(prisma);
  if (!cache) caches.set(prisma, (cache = new SnapshotCache()));
  return cache;
}

/** The span row a span update carries (recorded with the change), as the Span type reads it. */
function spanAsOf(state: SpanState): Span {
  return {
    ...state,
    kind: state.kind as SpanKind,
    status: state.status as SpanStatus,
    attributes: state.attributes as Span["attributes"],
    usage: state.usage as Span["usage"],
    startedAt: new Date(state.startedAt),
    endedAt: state.endedAt ? new Date(state.endedAt) : null,
  };
}

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
  } satisfies Record<TraceUpdate["type"], unknown>,
});

const TraceUpdateRef = builder.objectRef<TraceUpdate>("TraceUpdate").implement({
  description: "One change to a trace, in the trace's sequence order.",
  fields: (t) => ({
    seq: t.string({
      description: "The trace's monotonic sequence number; pass the last one you saw as afterSeq to resume.",
      resolve: (update) => String(update.seq),
    }),
    kind: t.field({ type: TraceUpdateKind, resolve: (update) => update.type }),
    at: t.field({ type: "DateTime", resolve: (update) => update.at }),
    span: t.field({
      type: SpanObject,
      nullable: true,
      description:
        "The span as it was after this update, also when the update is replayed later (its status, times, attributes and usage then). " +
        "Null for EVENT_APPENDED and TRACE_ENDED. (Updates recorded before Dossier kept a span's state with its update show the span as it is now.)",
      resolve: (update, _args, ctx) => {
        if (update.span) return spanAsOf(update.span);
        // Subscribers of a trace receive the same update: they share one read, not one each.
        return update.spanId
          ? snapshots(ctx.prisma).read(`span:${update.spanId}@${update.seq}`, () => ctx.prisma.span.findUnique({ where: { id: update.spanId! } }))
          : null;
      },
    }),
    // Every subscriber of a trace receives the same update: they share one read of the event.
    event: t.field({
      type: SpanEventObject,
      nullable: true,
      description: "For EVENT_APPENDED: the event, with its preview.",
      resolve: (update, _args, ctx) =>
        update.eventId
          ? snapshots(ctx.prisma).read(`event:${update.eventId}`, () =>
              ctx.prisma.spanEvent.findUnique({
                where: { id: update.eventId! },
                select: { id: true, spanId: true, seq: true, kind: true, at: true, payloadSize: true, preview: true },
              }),
            )
          : null,
    }),
  }),
});

builder.subscriptionField("traceUpdates", (t) =>
  t.field({
    type: TraceUpdateRef,
    description:
      "A run's span and event updates: first every change after `afterSeq` (all of them without it), then live ones. " +
      "Completes after TRACE_ENDED, or after RESYNC_REQUIRED when the subscriber falls too far behind.",
    args: { runId: t.arg.id({ required: true }), afterSeq: t.arg.string() },
    subscribe: async (_root, args, ctx) => {
      const runId = idOfType(String(args.runId), "Run");
      const visible = runId ? await ctx.prisma.run.count({ where: { id: runId, ownerId: ctx.actor.principalId } }) : 0;
      if (!runId || visible === 0) throw new GraphQLError("Run not found.", { extensions: { code: "NOT_FOUND" } });
      const afterSeq = args.afterSeq == null ? 0 : Number(args.afterSeq);
      if (!Number.isInteger(afterSeq) || afterSeq < 0) {
        throw new GraphQLError("afterSeq must be a sequence number from an earlier update.", { extensions: { code: "BAD_USER_INPUT" } });
      }
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
