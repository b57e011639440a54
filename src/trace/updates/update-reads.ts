// What a trace update shows besides itself: the span it changed, as it was after the change, and
// the event it appended. Every subscriber of a trace receives the same update, so they share one
// read of each (update-cache.ts), not one each.
import type { SpanState } from "../../events/topics.js";
import { Prisma, type PrismaClient, type Span, type SpanEvent, type SpanKind, type SpanStatus } from "../../generated/prisma/client.js";
import type { TraceUpdate } from "./trace-updates.js";
import { updateCacheOf } from "./update-cache.js";

/** The columns an appended event shows (its payload is read only when asked for). */
export type UpdateEvent = Pick<SpanEvent, "id" | "spanId" | "seq" | "kind" | "at" | "payloadSize" | "preview">;

/**
 * The span after this update, also when the update is replayed later. Updates recorded before
 * Dossier kept a span's state with its update read the span as it is now. Null for updates of no span.
 */
export function spanOfUpdate(update: TraceUpdate, prisma: PrismaClient): Span | null | Promise<Span | null> {
  if (update.span) return spanRowOf(update.span);
  if (!update.spanId) return null;
  const spanId = update.spanId;
  return updateCacheOf(prisma).read(`span:${spanId}@${update.seq}`, () => prisma.span.findUnique({ where: { id: spanId } }));
}

/** The event an EVENT_APPENDED update added; null for other updates. */
export function eventOfUpdate(update: TraceUpdate, prisma: PrismaClient): Promise<UpdateEvent | null> | null {
  if (!update.eventId) return null;
  const eventId = update.eventId;
  return updateCacheOf(prisma).read(`event:${eventId}`, () =>
    prisma.spanEvent.findUnique({
      where: { id: eventId },
      select: { id: true, spanId: true, seq: true, kind: true, at: true, payloadSize: true, preview: true },
    }),
  );
}

/** The span row a span update carries (recorded with the change), as a span is read. */
function spanRowOf(state: SpanState): Span {
  return {
    ...state,
    kind: state.kind as SpanKind,
    status: state.status as SpanStatus,
    cost: state.cost === null ? null : new Prisma.Decimal(state.cost),
    startedAt: new Date(state.startedAt),
    endedAt: state.endedAt ? new Date(state.endedAt) : null,
  };
}
