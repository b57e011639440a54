// Records traces in the database through the primitives of domain/trace/trace-writes.ts: each
// change takes the trace's next sequence number in the same transaction as the change itself, and
// is announced on the event bus after commit, so a subscriber can replay `seq > n` from the
// database and continue live without gaps (T2, T3). A run attempt records through its fence
// (`fenced`), so a superseded attempt's spans and events are never written.
import { type EventPublisher, publishRunListChange } from "../../events/topics.js";
import { retryingConflicts } from "../../db/transient-errors.js";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";
import { appendEventsIn, changeSpanIn, ensureTrace, publishTraceChanges, type TraceChange } from "../../domain/trace/trace-writes.js";
import { priceFoldedIn, REQUEST_MODEL_ATTRIBUTE } from "../../domain/costs/span-cost.js";
import { endingWith, endSpanPricedIn } from "../../domain/runs/span-end-statement.js";
import { type Holder, holdsRunSql } from "../../domain/runs/holder.js";
import { chargeRunIn } from "../../domain/runs/run-cost.js";
import { type Carried, type Transact, unfenced, within } from "../../domain/transaction.js";
import type { TokenUsage } from "../../runtime/ports/model.js";
import type { Attributes, EndedWith, EventOptions, RuntimeTrace, SpanEventKind, SpanRef, SpanStatus } from "../../runtime/ports/trace-sink.js";
import type { SpanExporter } from "../export/otlp-exporter.js";
import { endSpanStatement, endTraceStatement, startSpanStatement } from "../../domain/trace/span-statements.js";
import { newSpanId } from "../../domain/trace/span-ids.js";
import { TraceBound } from "./trace-bound.js";
import { GroupCommit, WriteBehind } from "./write-behind.js";
import { ignore, type PendingEvent, type PendingRecord, type RecordWriter, type SpanInput, sendCarrying, writeQueued } from "./queued-records.js";

export { EVENT_PREVIEW_CHARS, publishTraceChanges } from "../../domain/trace/trace-writes.js";

export type RecorderDeps = {
  prisma: PrismaClient;
  events: EventPublisher;
  exporter?: SpanExporter;
  now?: () => Date;
  /** Spans and events one run's trace keeps (MAX_TRACE_RECORDS; see trace-bound.ts); unbounded without it. */
  maxRecords?: number;
};

/** An attempt's fence as the recorder writes through it; `lost` says why it lost its run, once it did. */
type Fence = { write: Transact; holder: Holder; readonly lost?: Error | null };

type SpanEnd = { status: SpanStatus; attributes?: Attributes; usage?: TokenUsage };

export class PrismaTraceRecorder implements RuntimeTrace {
  private readonly transact: Transact;
  /** The attempt that must still hold the run (a fenced recorder's), checked inside each event write. */
  private readonly guard: Holder | undefined;
  /** Events waiting for their trace's next group commit, by trace. */
  private readonly grouped = new GroupCommit<PendingEvent>((batch) => this.writeEvents(batch));
  /** The bound on each trace's spans and events, shared by this recorder's fenced copies. */
  private readonly bound: TraceBound;
  /** A fenced recorder's records, written behind the attempt's work in order (write-behind.ts). */
  private readonly behind: WriteBehind<PendingRecord> | undefined;
  /** Spans handed out before their start was written that the trace did not keep: the folded reference each stands for. */
  private readonly redirects = new Map<string, SpanRef>();

  constructor(
    private readonly deps: RecorderDeps,
    private readonly fence?: Fence,
    bound?: TraceBound,
  ) {
    this.transact = fence?.write ?? unfenced(deps.prisma);
    this.guard = fence?.holder;
    this.bound = bound ?? new TraceBound(deps.maxRecords);
    this.behind = fence ? new WriteBehind((batch) => writeQueued(this.writer(), batch)) : undefined;
  }

  /** What the attempt's writer writes queued records with, and how it writes one alone (queued-records.ts). */
  private writer(): RecordWriter {
    return {
      ...{ prisma: this.deps.prisma, bound: this.bound, guard: this.statementGuard(), resolve: (span) => this.resolve(span) },
      ...{ announce: (changes) => this.announce(changes), unlessLost: () => this.unlessLost(), writeEvents: (events) => this.writeEvents(events) },
      startSpan: async ({ id, input, at }) => {
        const started = await this.startSpanNow({ ...input, parent: input.parent && this.resolve(input.parent) }, id, at);
        if (started.id !== id) this.redirects.set(id, started);
      },
      endSpan: ({ span, status, at }) => this.endSpanNow(this.resolve(span), { status }, at),
    };
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

  /**
   * Starts a span. A fenced recorder hands out the span's reference at once (its id is made here)
   * and writes the start behind the attempt's work; the trace's bound is decided when it is written.
   */
  async startSpan(input: SpanInput): Promise<SpanRef> {
    this.unlessLost();
    const at = this.now();
    if (!this.behind) return this.startSpanNow(input, newSpanId(), at);
    const ref = { id: newSpanId(), traceId: input.traceId };
    this.behind.check();
    this.behind.record({ type: "start", traceId: input.traceId, id: ref.id, input, at, payload: "", resolve: ignore, reject: ignore });
    return ref;
  }

  /** What a span handed out stands for: itself, or the kept span it was folded into. */
  private resolve(span: SpanRef): SpanRef {
    return this.redirects.get(span.id) ?? span;
  }

  private async startSpanNow(input: SpanInput, id: string, at: Date): Promise<SpanRef> {
    // One statement, the fence's check inside it; only a refused one goes on to the fenced
    // transaction below, which says why (and stops the attempt).
    const parentId = input.parent?.id ?? null;
    const bounded = parentId ? this.bound.maxRecords : undefined;
    const row = { id, traceId: input.traceId, parentId, kind: input.kind, name: input.name, attributes: input.attributes, at };
    const started = await startSpanStatement(this.deps.prisma, row, this.statementGuard(), bounded);
    let spanId: string | null = null;
    if (started?.kept) {
      this.announce([started.change]);
      spanId = started.spanId;
    } else if (started === null) {
      spanId = await this.record(async (tx) => {
        const again = await this.bound.startSpan(tx, { ...input, id, parentId, at });
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

  /**
   * Writes `write` now, or — a fenced recorder — behind the attempt's work. What charges the run
   * (model usage) is waited for: the next turn's cost caps read the run's spend.
   */
  private behindWork(write: () => Promise<void>, charges: boolean): Promise<void> {
    if (!this.behind) return write();
    if (charges) return this.behind.enqueue(write);
    this.behind.detach(write);
    return Promise.resolve();
  }

  async updateSpan(span: SpanRef, update: { attributes?: Attributes; usage?: TokenUsage }): Promise<void> {
    this.unlessLost();
    const at = this.now();
    await this.behindWork(async () => {
      const target = this.resolve(span);
      if (this.bound.isFolded(target)) return this.foldedUsage(target, update.usage, false, at);
      await this.recordSpanChange(async (tx) => ({ value: undefined, changes: [await changeSpanIn(tx, target, { ...update, at })] }));
    }, Boolean(update.usage));
  }

  /** Ends a span; a model call that ends with usage is priced and charged to its run in the same transaction. */
  async endSpan(span: SpanRef, end: SpanEnd): Promise<void> {
    this.unlessLost();
    const at = this.now();
    if (this.behind && !end.usage && !end.attributes) {
      // Only the status changes: written with the records next to it (queued-records.ts).
      this.behind.check();
      return this.behind.record({ type: "end", traceId: span.traceId, span, status: end.status, at, payload: "", resolve: ignore, reject: ignore });
    }
    await this.behindWork(() => this.endSpanNow(this.resolve(span), end, at), Boolean(end.usage));
  }

  private async endSpanNow(span: SpanRef, end: SpanEnd, at: Date): Promise<void> {
    if (this.bound.isFolded(span)) return this.foldedUsage(span, end.usage, true, at);
    if (!end.usage && !end.attributes) {
      // Only the status changes: one statement, as a span's start (run again if it loses to the
      // span row's move into the retained partition, as recordSpanChange is).
      const ended = await retryingConflicts(() => endSpanStatement(this.deps.prisma, span, { status: end.status, at }, this.statementGuard()));
      if (ended) return this.announce([ended]);
    }
    await this.recordSpanChange(async (tx) => {
      // One statement: a model call's usage priced, and its cost charged to the run (its owner returned).
      const { owner, change } = await endSpanPricedIn(tx, span, end, at);
      return { value: owner, changes: [change] };
    }).then((owner) => this.costChanged(owner));
  }

  /**
   * Ends a span with the first write of `work` (through the recorder's fence, after every record
   * queued before it): a model call's end, its price and its charge commit with the reply it
   * produced, in the reply's log append (one statement) or its transaction. Resolves with
   * `work`'s value once committed.
   */
  endSpanWith<T>(span: SpanRef, end: SpanEnd & { tokens?: number }, work: (write: Transact, ended: EndedWith) => Promise<T>): Promise<T> {
    this.unlessLost();
    const at = this.now();
    const write = async () => {
      const target = this.resolve(span);
      if (this.bound.isFolded(target)) {
        await this.foldedUsage(target, end.usage, true, at);
        return this.transact((tx, after) => work(within(tx, after), { addsTokens: false, tokensUsed: null }));
      }
      const ended = { addsTokens: true, tokensUsed: null as number | null };
      const route = { db: this.deps.prisma, holder: this.guard, refuse: () => this.unlessLost() };
      const ending = endingWith(route, this.transact, { span: target, end, at }, (result) => {
        ended.tokensUsed = result.tokensUsed;
        this.announce([result.change]);
        this.costChanged(result.owner);
      });
      const value = await work(ending.write, ended);
      // `work` wrote nothing: the end alone.
      if (!ending.done()) await ending.write(async () => undefined);
      return value;
    };
    return this.behind ? this.behind.enqueue(write) : write();
  }

  /** Resolves once every record handed to this recorder so far is committed; rejects with the write that failed. */
  flushed(): Promise<void> {
    return this.behind?.flushed() ?? Promise.resolve();
  }

  /** Sends `statement` after the records handed before it, carrying those not written yet (queued-records.ts, sendCarrying). */
  inOrder<T>(statement: (carry: Carried | undefined) => Promise<T | null>): Promise<T | null> {
    this.unlessLost();
    if (!this.behind) return statement(undefined);
    return this.behind.carry((records) => sendCarrying(this.writer(), records, statement));
  }

  /** Starts writing the records handed so far at once (TraceSink.writeNow). */
  writeNow(): void {
    this.behind?.writeNow();
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
  private async foldedUsage(span: SpanRef, usage: TokenUsage | undefined, ended: boolean, at: Date): Promise<void> {
    if (!usage) return;
    const model = ended ? this.bound.modelOf(span) : undefined;
    await this.record(async (tx) => {
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
      const text = typeof payload === "string" ? payload : JSON.stringify(payload);
      const { traceId } = span;
      const pending = { traceId, spanId: span.id, kind, payload: text, messageId: options.messageId ?? null, at: this.now(), resolve, reject };
      if (this.behind) return this.behind.record({ type: "event", ...pending });
      this.grouped.add(pending);
    });
  }

  /** Writes events of one trace in one statement and settles each with its seq (0: past the bound). */
  private async writeEvents(batch: PendingEvent[]): Promise<void> {
    const { traceId } = batch[0]!;
    const rows = this.bound.knownTruncated(traceId) ? [] : batch.map((event) => ({ ...event, spanId: this.resolve({ id: event.spanId, traceId }).id }));
    const changes = rows.length > 0 ? await this.append(traceId, rows) : [];
    for (const [index, event] of batch.entries()) event.resolve(changes[index]?.seq ?? 0);
    if (rows.length > 0 && changes.length < batch.length) await this.truncate(traceId);
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
    await this.record(async (tx) => ({ value: undefined, changes: [await endTraceStatement(tx, traceId, this.now())] }));
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
