// A TraceSink that keeps spans and events in memory, for tests of runtime parts that do not
// need the database. It keeps the same seq discipline as the database recorder.
import type { TokenUsage } from "../../src/runtime/ports/model.js";
import type { Attributes, EventOptions, SpanEventKind, SpanKind, SpanRef, SpanStatus, TraceSink } from "../../src/runtime/ports/trace-sink.js";

export type RecordedSpan = {
  id: string;
  parentId: string | null;
  kind: SpanKind;
  name: string;
  status: SpanStatus | "RUNNING";
  attributes: Attributes;
  usage: TokenUsage | null;
  startedAt: number;
  endedAt: number | null;
  events: { seq: number; kind: SpanEventKind; payload: string; messageId?: string }[];
};

export class InMemoryTraceSink implements TraceSink {
  readonly spans: RecordedSpan[] = [];
  private seq = 0;

  async startSpan(input: { traceId: string; parent?: SpanRef; kind: SpanKind; name: string; attributes?: Attributes }): Promise<SpanRef> {
    this.seq += 1;
    const span: RecordedSpan = {
      id: `span-${this.spans.length + 1}`,
      parentId: input.parent?.id ?? null,
      kind: input.kind,
      name: input.name,
      status: "RUNNING",
      attributes: { ...input.attributes },
      usage: null,
      startedAt: performance.now(),
      endedAt: null,
      events: [],
    };
    this.spans.push(span);
    return { id: span.id, traceId: input.traceId };
  }

  async updateSpan(ref: SpanRef, update: { attributes?: Attributes; usage?: TokenUsage }): Promise<void> {
    this.seq += 1;
    const span = this.find(ref);
    Object.assign(span.attributes, update.attributes);
    if (update.usage) span.usage = update.usage;
  }

  async endSpan(ref: SpanRef, end: { status: SpanStatus; attributes?: Attributes; usage?: TokenUsage }): Promise<void> {
    this.seq += 1;
    const span = this.find(ref);
    Object.assign(span.attributes, end.attributes);
    if (end.usage) span.usage = end.usage;
    span.status = end.status;
    span.endedAt = performance.now();
  }

  async event(ref: SpanRef, kind: SpanEventKind, payload: string | object, options: EventOptions = {}): Promise<number> {
    this.seq += 1;
    const text = typeof payload === "string" ? payload : JSON.stringify(payload);
    this.find(ref).events.push({ seq: this.seq, kind, payload: text, ...(options.messageId ? { messageId: options.messageId } : {}) });
    return this.seq;
  }

  byName(name: string): RecordedSpan[] {
    return this.spans.filter((span) => span.name === name);
  }

  private find(ref: SpanRef): RecordedSpan {
    const span = this.spans.find((candidate) => candidate.id === ref.id);
    if (!span) throw new Error(`unknown span ${ref.id}`);
    return span;
  }
}
