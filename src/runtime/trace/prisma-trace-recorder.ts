// Records traces in the database. Each change takes the trace's next sequence number in the
// same transaction as the change itself, and is announced on the event bus after commit, so a
// subscriber can replay `seq > n` from the database and continue live without gaps (T2, T3).
import type { EventPublisher, TraceChangeMessage } from "../../events/topics.js";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";
import type { Attributes, SpanEventKind, SpanKind, SpanRef, SpanStatus, TraceSink } from "../ports/trace-sink.js";
import type { TokenUsage } from "../ports/model.js";
import type { SpanExporter } from "./otlp-exporter.js";
import { countEvent, countSpan, countTokens } from "../../metrics/dossier-metrics.js";

type Tx = Prisma.TransactionClient;

/** How much of an event's payload is shown unless the full payload is asked for (T4). */
export const EVENT_PREVIEW_CHARS = 500;
type ChangeType = TraceChangeMessage["type"];

export class PrismaTraceRecorder implements TraceSink {
  constructor(
    private readonly deps: { prisma: PrismaClient; events: EventPublisher; exporter?: SpanExporter; now?: () => Date },
  ) {}

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /** The run's trace, created on first use. It shares the run's id, so subscribers can key on the run. */
  async traceFor(runId: string): Promise<string> {
    const trace = await this.deps.prisma.trace.upsert({
      where: { runId },
      create: { id: runId, runId },
      update: {},
      select: { id: true },
    });
    return trace.id;
  }

  async startSpan(input: { traceId: string; parent?: SpanRef; kind: SpanKind; name: string; attributes?: Attributes }): Promise<SpanRef> {
    const span = await this.record(input.traceId, "SPAN_STARTED", async (tx) => {
      const created = await tx.span.create({
        data: {
          traceId: input.traceId,
          parentId: input.parent?.id ?? null,
          kind: input.kind,
          name: input.name,
          attributes: (input.attributes ?? {}) as Prisma.InputJsonValue,
          startedAt: this.now(),
        },
        select: { id: true },
      });
      return { spanId: created.id };
    });
    countSpan(input.kind);
    return { id: span.spanId!, traceId: input.traceId };
  }

  async updateSpan(span: SpanRef, update: { attributes?: Attributes; usage?: TokenUsage }): Promise<void> {
    await this.record(span.traceId, "SPAN_UPDATED", async (tx) => {
      await this.writeSpan(tx, span, update);
      return { spanId: span.id };
    });
  }

  async endSpan(span: SpanRef, end: { status: SpanStatus; attributes?: Attributes; usage?: TokenUsage }): Promise<void> {
    await this.record(span.traceId, "SPAN_ENDED", async (tx) => {
      await this.writeSpan(tx, span, { ...end, endedAt: this.now() });
      return { spanId: span.id };
    });
    if (end.usage) countTokens(end.usage);
    this.deps.exporter?.spanEnded(span.id);
  }

  async event(span: SpanRef, kind: SpanEventKind, payload: string | object): Promise<number> {
    const text = typeof payload === "string" ? payload : JSON.stringify(payload);
    const { seq } = await this.record(span.traceId, "EVENT_APPENDED", async (tx, seq) => {
      const event = await tx.spanEvent.create({
        data: {
          spanId: span.id,
          seq,
          kind,
          payload: text,
          preview: text.slice(0, EVENT_PREVIEW_CHARS),
          payloadSize: Buffer.byteLength(text, "utf8"),
          at: this.now(),
        },
        select: { id: true },
      });
      return { spanId: span.id, eventId: event.id };
    });
    countEvent(kind);
    return seq;
  }

  async endTrace(traceId: string): Promise<void> {
    await this.record(traceId, "TRACE_ENDED", async (tx) => {
      await tx.trace.update({ where: { id: traceId }, data: { endedAt: this.now() } });
      return {};
    });
  }

  private async writeSpan(
    tx: Tx,
    span: SpanRef,
    update: { status?: SpanStatus; attributes?: Attributes; usage?: TokenUsage; endedAt?: Date },
  ): Promise<void> {
    const current = update.attributes
      ? await tx.span.findUniqueOrThrow({ where: { id: span.id }, select: { attributes: true } })
      : null;
    await tx.span.update({
      where: { id: span.id },
      data: {
        ...(update.status ? { status: update.status } : {}),
        ...(update.endedAt ? { endedAt: update.endedAt } : {}),
        ...(update.usage ? { usage: update.usage } : {}),
        ...(current ? { attributes: { ...(current.attributes as object), ...update.attributes } as Prisma.InputJsonValue } : {}),
      },
    });
  }

  /** Takes the next seq, writes the change and its replay-log row in one transaction, then announces it. */
  private async record(
    traceId: string,
    type: ChangeType,
    write: (tx: Tx, seq: number) => Promise<{ spanId?: string; eventId?: string }>,
  ): Promise<{ seq: number; spanId?: string; eventId?: string }> {
    const result = await this.deps.prisma.$transaction(async (tx) => {
      const { lastSeq: seq } = await tx.trace.update({
        where: { id: traceId },
        data: { lastSeq: { increment: 1 } },
        select: { lastSeq: true },
      });
      const ids = await write(tx, seq);
      const at = this.now();
      await tx.traceChange.create({
        data: { traceId, seq, type, spanId: ids.spanId ?? null, eventId: ids.eventId ?? null, at },
      });
      return { seq, at, ...ids };
    });
    this.deps.events.publish("trace:change", traceId, {
      traceId,
      seq: result.seq,
      type,
      spanId: result.spanId ?? null,
      eventId: result.eventId ?? null,
      at: result.at.toISOString(),
    });
    return result;
  }
}

/** Runs `work` inside a span that is always ended: OK on success, ERROR (with the message) on failure. */
export async function withSpan<T>(
  sink: TraceSink,
  input: Parameters<TraceSink["startSpan"]>[0],
  work: (span: SpanRef) => Promise<T>,
  classify: (error: unknown) => SpanStatus = () => "ERROR",
): Promise<T> {
  const span = await sink.startSpan(input);
  try {
    const result = await work(span);
    await sink.endSpan(span, { status: "OK" });
    return result;
  } catch (error) {
    await sink.endSpan(span, {
      status: classify(error),
      attributes: { error: error instanceof Error ? error.message : String(error) },
    });
    throw error;
  }
}
