// A bound per trace (MAX_TRACE_RECORDS): a run's trace keeps at most that many spans and events.
// The count is a column of the trace row, moved by the same statement that hands out seq numbers,
// so bounding costs no extra statement and no count of rows. Past the bound the run goes on:
//
// - the trace records one TRUNCATED event, on the RUN span (Trace.truncatedAt says when);
// - events are no longer written (the recorder stops issuing statements for them once it knows);
// - a new span is not kept: the runtime is handed its parent's reference instead ("folded"), so
//   what is nested below it still has a kept span above it. Ending a folded span writes nothing;
//   its model usage is added to the usage of the kept span it was folded into, so Trace.usage,
//   Span.cumulativeUsage and cost stay exact;
// - spans that were kept still end, with their status and usage.
//
// Spans without a parent (the RUN span) and what claims, settling, decisions and steering write in
// transactions of their own are never dropped: they are few per run and carry its state.
import type { Prisma } from "../../generated/prisma/client.js";
import { usageOf, type JsonValue } from "../../domain/json-columns.js";
import { appendEventIn, changeSpanIn, startBoundedSpanIn, startSpanIn, type TraceChange } from "../../domain/trace/trace-writes.js";
import type { TokenUsage } from "../../runtime/ports/model.js";
import type { SpanRef } from "../../runtime/ports/trace-sink.js";
import { sumUsage } from "../read/trace-reads.js";

type Tx = Prisma.TransactionClient;
/** A span not kept: the usage it reported so far and, for a model call, the model it asked for (to price it). */
type Folded = { usage: TokenUsage | null; model: string | null | undefined };

/** Truncated traces remembered at most, so a process that never sees their end stays small. */
const REMEMBERED = 10_000;

export class TraceBound {
  /** The references handed out for spans that were not kept, and the usage each reported so far. */
  private readonly folded = new WeakMap<SpanRef, Folded>();
  /** Traces known to be truncated: their events are dropped without a statement. */
  private readonly truncated = new Set<string>();

  constructor(readonly maxRecords: number | undefined) {}

  /** Starts a span, within the bound when it has a parent; null when the trace did not keep it. */
  startSpan(tx: Tx, input: Parameters<typeof startSpanIn>[1]) {
    if (this.maxRecords === undefined || !input.parentId) return startSpanIn(tx, input);
    return startBoundedSpanIn(tx, input, this.maxRecords);
  }

  /** The reference the runtime gets for a span that was not kept: its parent's, marked folded. */
  fold(parent: SpanRef, model?: unknown): SpanRef {
    const ref = { id: parent.id, traceId: parent.traceId };
    this.folded.set(ref, { usage: null, model: model === undefined ? undefined : typeof model === "string" ? model : null });
    return ref;
  }

  /** The model a folded model call asked for (null: none named); undefined for other spans. */
  modelOf(span: SpanRef): string | null | undefined {
    return this.folded.get(span)?.model;
  }

  isFolded(span: SpanRef): boolean {
    return this.folded.has(span);
  }

  /**
   * Adds what a folded span's usage moved by since it last reported one (a span reports its
   * whole usage each time) to the kept span it stands in, whose row is locked for the sum.
   */
  async addFoldedUsage(tx: Tx, span: SpanRef, usage: TokenUsage, at: Date): Promise<TraceChange | null> {
    const entry = this.folded.get(span)!;
    const before = entry.usage ?? { input: 0, output: 0, cached: 0, reasoning: 0 };
    const delta = {
      input: usage.input - before.input,
      output: usage.output - before.output,
      cached: usage.cached - before.cached,
      reasoning: usage.reasoning - before.reasoning,
    };
    entry.usage = usage;
    if (Object.values(delta).every((n) => n === 0)) return null;
    const [row] = await tx.$queryRawUnsafe<{ usage: JsonValue }[]>(`SELECT usage FROM span WHERE id = $1 FOR UPDATE`, span.id);
    return changeSpanIn(tx, span, { usage: sumUsage([usageOf(row?.usage ?? null), delta]), at });
  }

  knownTruncated(traceId: string): boolean {
    return this.truncated.has(traceId);
  }

  /**
   * Marks the trace truncated and writes its TRUNCATED event on the RUN span, unless that was
   * already done (by this process or another): a trace is truncated once.
   */
  async truncateIn(tx: Tx, traceId: string, at: Date): Promise<TraceChange | null> {
    const marked = await tx.trace.updateMany({ where: { id: traceId, truncatedAt: null }, data: { truncatedAt: at } });
    if (marked.count === 0) return null;
    const root = await tx.span.findFirst({ where: { traceId, kind: "RUN" }, orderBy: { startedAt: "asc" }, select: { id: true } });
    if (!root) return null;
    const payload = { maxRecords: this.maxRecords, kept: "span ends and model usage only from here on" };
    return appendEventIn(tx, { id: root.id, traceId }, { kind: "TRUNCATED", payload, at });
  }

  /** Remembers, after its commit, that a trace is truncated. */
  noteTruncated(traceId: string): void {
    if (this.truncated.size >= REMEMBERED) this.truncated.clear();
    this.truncated.add(traceId);
  }

  forget(traceId: string): void {
    this.truncated.delete(traceId);
  }
}
