// Records traces in the database through the primitives of domain/trace/trace-writes.ts: each
// change takes the trace's next sequence number in the same transaction as the change itself, and
// is announced on the event bus after commit, so a subscriber can replay `seq > n` from the
// database and continue live without gaps (T2, T3). A run attempt records through its fence
// (`fenced`), so a superseded attempt's spans and events are never written.
import { type EventPublisher, publishRunListChange } from "../../events/topics.js";
import { retryingConflicts } from "../../db/transient-errors.js";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { appendEventsIn, changeSpanIn, ensureTrace, endTraceIn, publishTraceChanges, type TraceChange } from "../../domain/trace/trace-writes.js";
import { priceFoldedIn, priceSpanIn, REQUEST_MODEL_ATTRIBUTE } from "../../domain/costs/span-cost.js";
import { type Holder, holdsRunSql } from "../../domain/runs/holder.js";
import { chargeRunIn } from "../../domain/runs/run-cost.js";
import { type Transact, unfenced } from "../../domain/transaction.js";
import type { TokenUsage } from "../../runtime/ports/model.js";
import type { Attributes, EventOptions, RuntimeTrace, SpanEventKind, SpanKind, SpanRef, SpanStatus } from "../../runtime/ports/trace-sink.js";
import type { SpanExporter } from "../export/otlp-exporter.js";
import { endSpanStatement, startSpanStatement } from "../../domain/trace/span-statements.js";
import { TraceBound } from "./trace-bound.js";

export { EVENT_PREVIEW_CHARS, publishTraceChanges } from "../../domain/trace/trace-writes.js";

export type RecorderDeps = {
  prisma: PrismaClient;
  events: EventPublisher;
  exporter?: SpanExporter;
  now?: () => Date;
  /** Spans and events one run's trace keeps (MAX_TRACE_RECORDS; see trace-bound.ts); unbounded without it. */
  maxRecords?: number;
};

type PendingEvent = {
  spanId: string;
  kind: SpanEventKind;
  payload: string;
  messageId: string | null;
  at: Date;
  resolve: (seq: number) => void;
  reject: (error: unknown) => void;
};
/** An attempt's fence as the recorder writes through it; `lost` says why it lost its run, once it did. */
type Fence = { write: Transact; holder: Holder; readonly lost?: Error | null };

type EventQueue = { pending: PendingEvent[]; flushing: boolean };

/** One write holds at most this many events, or about this many characters of payload. */
const BATCH_EVENTS = 256;
const BATCH_CHARS = 4_000_000;

/** The events at the front of the queue that make one write (always at least one). */
function takeBatch(pending: PendingEvent[]): PendingEvent[] {
  let count = 0;
  let chars = 0;
  while (count < pending.length && count < BATCH_EVENTS && (count === 0 || chars < BATCH_CHARS)) {
    chars += pending[count]!.payload.length;
    count += 1;
  }
  return pending.splice(0, count);
}

export class PrismaTraceRecorder implements RuntimeTrace {
  private readonly transact: Transact;
  /** The attempt that must still hold the run (a fenced recorder's), checked inside each event write. */
  private readonly guard: Holder | undefined;
  /** Events waiting for their trace's next group commit, by trace. */
  private readonly queues = new Map<string, EventQueue>();
  /** The bound on each trace's spans and events, shared by this recorder's fenced copies. */
  private readonly bound: TraceBound;

  constructor(
    private readonly deps: RecorderDeps,
    private readonly fence?: Fence,
    bound?: TraceBound,
  ) {
    this.transact = fence?.write ?? unfenced(deps.prisma);
    this.guard = fence?.holder;
    this.bound = bound ?? new TraceBound(deps.maxRecords);
  }

  /** The same recorder, writing through an attempt's fence. */
  fenced(fence: Fence): PrismaTraceRecorder {
    return new PrismaTraceRecorder(this.deps, fence, this.bound);
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /** The run's trace, created on first use. It shares the run's id, so subscribers can key on the run. */
  traceFor(runId: string): Promise<string> {
    return this.transact((tx) => ensureTrace(tx, runId));
  }

  async startSpan(input: { traceId: string; parent?: SpanRef; kind: SpanKind; name: string; attributes?: Attributes }): Promise<SpanRef> {
    this.unlessLost();
    // One statement, the fence's check inside it; only a refused one goes on to the fenced
    // transaction below, which says why (and stops the attempt).
    const parentId = input.parent?.id ?? null;
    const bounded = parentId ? this.bound.maxRecords : undefined;
    const row = { traceId: input.traceId, parentId, kind: input.kind, name: input.name, attributes: input.attributes, at: this.now() };
    const started = await startSpanStatement(this.deps.prisma, row, this.statementGuard(), bounded);
    let spanId: string | null = null;
    if (started?.kept) {
      this.announce([started.change]);
      spanId = started.spanId;
    } else if (started === null) {
      spanId = await this.record(async (tx) => {
        const again = await this.bound.startSpan(tx, { ...input, parentId, at: this.now() });
        return again ? { value: again.spanId, changes: [again.change] } : { value: null, changes: [] };
      });
    }
    if (spanId) return { id: spanId, traceId: input.traceId };
    await this.truncate(input.traceId);
    return this.bound.fold(input.parent!, input.kind === "MODEL_CALL" ? input.attributes?.[REQUEST_MODEL_ATTRIBUTE] : undefined);
  }

  /** An attempt that lost its run sends nothing more: its writes fail at once, with why. */
  private unlessLost(): void {
    if (this.fence?.lost) throw this.fence.lost;
  }

  /** The fence's check as part of a statement, for a fenced recorder. */
  private statementGuard() {
    return this.guard && { ...this.guard, holdsRunSql };
  }

  async updateSpan(span: SpanRef, update: { attributes?: Attributes; usage?: TokenUsage }): Promise<void> {
    this.unlessLost();
    if (this.bound.isFolded(span)) return this.foldedUsage(span, update.usage);
    await this.recordSpanChange(async (tx) => ({ value: undefined, changes: [await changeSpanIn(tx, span, { ...update, at: this.now() })] }));
  }

  /** Ends a span; a model call that ends with usage is priced and charged to its run in the same transaction. */
  async endSpan(span: SpanRef, end: { status: SpanStatus; attributes?: Attributes; usage?: TokenUsage }): Promise<void> {
    this.unlessLost();
    if (this.bound.isFolded(span)) return this.foldedUsage(span, end.usage, true);
    if (!end.usage && !end.attributes) {
      // Only the status changes: one statement, as a span's start (run again if it loses to the
      // span row's move into the retained partition, as recordSpanChange is).
      const ended = await retryingConflicts(() => endSpanStatement(this.deps.prisma, span, { status: end.status, at: this.now() }, this.statementGuard()));
      if (ended) return this.announce([ended]);
    }
    await this.recordSpanChange(async (tx) => {
      const at = this.now();
      const priced = end.usage ? await priceSpanIn(tx, span, end.usage, at) : null;
      const change = await changeSpanIn(tx, span, { ...end, ...(priced ? { cost: priced.cost } : {}), at });
      const owner = priced ? await chargeRunIn(tx, priced.runId, priced.cost) : null;
      return { value: owner, changes: [change] };
    }).then((owner) => this.costChanged(owner));
  }

  /** A run's cost changed (committed): its owner's live run lists hear it (runsChanged). */
  private costChanged(owner: string | null): void {
    if (owner !== null) publishRunListChange(this.deps.events, owner);
  }

  /**
   * A span the trace did not keep reports usage: it is added to the kept span it was folded into.
   * When a folded model call ends, its whole usage is priced at its own model and the cost is
   * added to that kept span and charged to the run, so Run.cost still sums the kept spans' cost.
   */
  private async foldedUsage(span: SpanRef, usage: TokenUsage | undefined, ended = false): Promise<void> {
    if (!usage) return;
    const model = ended ? this.bound.modelOf(span) : undefined;
    await this.record(async (tx) => {
      const at = this.now();
      const change = await this.bound.addFoldedUsage(tx, span, usage, at);
      const priced = model === undefined ? null : await priceFoldedIn(tx, span, model, usage, at);
      const owner = priced ? await chargeRunIn(tx, priced.runId, priced.cost) : null;
      return { value: owner, changes: [change] };
    }).then((owner) => this.costChanged(owner));
  }

  /** Records, once per trace, that it reached its bound (its TRUNCATED event). */
  private async truncate(traceId: string): Promise<void> {
    if (this.bound.knownTruncated(traceId)) return;
    await this.record(async (tx) => {
      const change = await this.bound.truncateIn(tx, traceId, this.now());
      return { value: undefined, changes: [change] };
    });
    this.bound.noteTruncated(traceId);
  }

  /**
   * Announces committed changes: to live subscribers, and every span that ended to the OTLP
   * exporter. Whoever writes the trace in a transaction of its own (claims, settling) calls this.
   */
  announce(changes: readonly (TraceChange | null)[]): void {
    publishTraceChanges(this.deps.events, changes);
    for (const change of changes) if (change?.type === "SPAN_ENDED" && change.spanId) this.deps.exporter?.spanEnded(change.spanId);
  }

  /** Hands spans ended outside the runtime (a cancellation) to the OTLP exporter. */
  exportEnded(spanIds: readonly string[]): void {
    for (const id of spanIds) this.deps.exporter?.spanEnded(id);
  }

  /**
   * Appends an event; resolves with its sequence number once it is committed. Events of one
   * trace are group-committed: the first is written at once, and those that arrive while a write
   * is in flight go together in the next one (one statement), in arrival order.
   */
  event(span: SpanRef, kind: SpanEventKind, payload: string | object, options: EventOptions = {}): Promise<number> {
    // Past the bound nothing more is written: no statement either.
    if (this.bound.knownTruncated(span.traceId)) return Promise.resolve(0);
    if (this.fence?.lost) return Promise.reject(this.fence.lost);
    return new Promise<number>((resolve, reject) => {
      let queue = this.queues.get(span.traceId);
      if (!queue) this.queues.set(span.traceId, (queue = { pending: [], flushing: false }));
      const text = typeof payload === "string" ? payload : JSON.stringify(payload);
      queue.pending.push({ spanId: span.id, kind, payload: text, messageId: options.messageId ?? null, at: this.now(), resolve, reject });
      if (!queue.flushing) void this.flush(span.traceId, queue);
    });
  }

  private async flush(traceId: string, queue: EventQueue): Promise<void> {
    queue.flushing = true;
    while (queue.pending.length > 0) {
      const batch = takeBatch(queue.pending);
      try {
        const changes = await this.append(traceId, batch);
        for (const [index, event] of batch.entries()) event.resolve(changes[index]?.seq ?? 0);
        if (changes.length < batch.length) await this.truncate(traceId);
      } catch (error) {
        for (const event of batch) event.reject(error);
      }
    }
    queue.flushing = false;
    this.queues.delete(traceId);
  }

  /**
   * Writes a batch as one statement, which is atomic on its own: no transaction around it, and a
   * fenced recorder's check of its attempt is part of the statement. When the check fails,
   * nothing was written, and the fenced write says why (and stops the attempt).
   */
  private async append(traceId: string, batch: readonly PendingEvent[]): Promise<TraceChange[]> {
    this.unlessLost();
    const appended = await appendEventsIn(this.deps.prisma, traceId, batch, this.statementGuard(), this.bound.maxRecords);
    if (appended) {
      this.announce(appended);
      return appended;
    }
    return this.record(async (tx) => {
      const written = (await appendEventsIn(tx, traceId, batch, undefined, this.bound.maxRecords))!;
      return { value: written, changes: written };
    });
  }

  async endTrace(traceId: string): Promise<void> {
    await this.record(async (tx) => ({ value: undefined, changes: [await endTraceIn(tx, traceId, this.now())] }));
    this.bound.forget(traceId);
  }

  /**
   * A change of a span that already exists (an update, its end). On
   * PostgreSQL a week's expiry may move the span's row to the retained partition while the change
   * waits for it: the change's transaction then fails as a serialization failure, nothing of it
   * written, and is run again (retryingConflicts), so a live run's span is never left unended.
   */
  private recordSpanChange<T>(write: (tx: Prisma.TransactionClient) => Promise<{ value: T; changes: (TraceChange | null)[] }>): Promise<T> {
    return retryingConflicts(() => this.record(write));
  }

  /** Writes through the transaction of this recorder, then announces the changes. */
  private record<T>(write: (tx: Prisma.TransactionClient) => Promise<{ value: T; changes: (TraceChange | null)[] }>): Promise<T> {
    return this.transact(async (tx, after) => {
      const { value, changes } = await write(tx);
      after.push(() => this.announce(changes));
      return value;
    });
  }
}
