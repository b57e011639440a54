// The trace port: how the runtime records its Span + Event tree (T1, T2). Every change is
// visible as soon as it is recorded, including spans still running.
import type { TraceChangeMessage } from "../../events/topics.js";
import type { Holder, Transact } from "./attempt-fence.js";
import type { InOrder } from "../../domain/transaction.js";
import type { TokenUsage } from "./model.js";

export type SpanKind = "RUN" | "ATTEMPT" | "TURN" | "MODEL_CALL" | "TOOL_CALL" | "COMPACTION" | "SPILL" | "SKILL_LOAD" | "MCP_CALL";
/** INTERRUPTED: ended by whoever superseded or stopped the attempt the span belonged to. */
export type SpanStatus = "OK" | "ERROR" | "CANCELLED" | "INTERRUPTED";
export type SpanEventKind =
  | "THINKING"
  | "TOOL_INPUT"
  | "TOOL_OUTPUT"
  | "FINAL_REPLY"
  | "ERROR"
  | "COMPACTION"
  | "SPILL"
  | "REPAIR"
  | "BUDGET"
  | "CONTEXT"
  | "INTERRUPTION"
  | "APPROVAL_REQUESTED"
  | "STEERED"
  | "STOP_REQUESTED"
  | "TRUNCATED";

export type SpanRef = { id: string; traceId: string };
export type EventOptions = { messageId?: string };
export type Attributes = Record<string, unknown>;

export interface TraceSink {
  /**
   * Starts a span. Past the trace's bound (MAX_TRACE_RECORDS) the span is not kept: the reference
   * returned stands for its parent, and its model usage is added there when it ends.
   */
  startSpan(input: { traceId: string; parent?: SpanRef; kind: SpanKind; name: string; attributes?: Attributes }): Promise<SpanRef>;
  /** Merges attributes into a running span; `usage` is the span's own model usage. */
  updateSpan(span: SpanRef, update: { attributes?: Attributes; usage?: TokenUsage }): Promise<void>;
  endSpan(span: SpanRef, end: { status: SpanStatus; attributes?: Attributes; usage?: TokenUsage }): Promise<void>;
  /**
   * Appends an event; an object payload is stored as JSON. Returns the event's seq. With
   * `messageId`, the payload is that log message's content: the trace keeps only its preview and
   * size, and reads the rest from the log, so the payload is stored once. 0: the trace reached
   * its bound (MAX_TRACE_RECORDS) and did not keep the event.
   */
  event(span: SpanRef, kind: SpanEventKind, payload: string | object, options?: EventOptions): Promise<number>;
  /**
   * A sink that writes behind the work (an attempt's): resolves once every record handed to it so
   * far is committed, and rejects with the write that failed. Without it every call above has
   * written its record by the time it resolves.
   */
  flushed?(): Promise<void>;
  /**
   * A sink that writes behind the work: sends `statement` (one statement of the attempt that
   * carries a write with its own, domain/transaction.ts) once the records handed to the sink
   * before it are written, carrying in it those not written yet, so that they cost no round trip
   * of their own. Resolves with its result, once committed.
   */
  inOrder?: InOrder;
  /**
   * A sink that writes behind the work: starts writing the records handed to it so far now, not
   * once the work in hand has made the next ones — before work that does not wait for them (a
   * model request), so that they are written while it runs.
   */
  writeNow?(): void;
  /**
   * Ends a span with the first write `work` makes through `write` (the attempt's fence, after
   * the records handed to the sink before it): in the same statement or transaction, so both
   * commit or neither. Resolves with `work`'s value once committed. `end.tokens` are budget tokens
   * added to the span's run in the same write as its charge, unless `ended.addsTokens` is false
   * (then `work` adds them); `ended.tokensUsed` is the run's tokens used after them, once written.
   */
  endSpanWith?<T>(span: SpanRef, end: SpanEnd & { tokens?: number }, work: (write: Transact, ended: EndedWith) => Promise<T>): Promise<T>;
}

/** What a span's end adds to its run, as the work written with it learns it. */
export type EndedWith = { readonly addsTokens: boolean; readonly tokensUsed: number | null };

export type SpanEnd = { status: SpanStatus; attributes?: Attributes; usage?: TokenUsage };

/** A committed change of a trace, as subscribers receive it. */
export type TraceChange = TraceChangeMessage;

/**
 * The trace as the worker and the executor use it: a sink per attempt that writes through the
 * attempt's fence, and the announcement of changes that claims and settling wrote in transactions
 * of their own (a superseded attempt's open spans ended, the run's spans closed).
 */
export interface RuntimeTrace extends TraceSink {
  /** The same trace, writing through an attempt's fence: nothing of an attempt that lost its run is written. */
  fenced(fence: { write: Transact; holder: Holder; readonly lost?: Error | null }): TraceSink;
  /** Announces committed changes to live subscribers, and spans that ended to the exporter. */
  announce(changes: readonly (TraceChange | null)[]): void;
  /** Hands spans ended outside the runtime (a cancellation) to the exporter. */
  exportEnded(spanIds: readonly string[]): void;
}
