// Dossier's metrics of runs, counted where the trace sees everything happen: every span started
// (model calls, tool calls), every event committed (compactions, spills) and the model usage of
// every span that ended with some. A decorator, so the trace itself knows nothing of metrics;
// spans that claims write in their own transaction are counted when they are announced.
import type { TokenUsage } from "../ports/model.js";
import type { RuntimeTrace, SpanEventKind, SpanKind, TraceSink } from "../ports/trace-sink.js";

/** What the trace reports to the metrics. */
export type TraceMetrics = {
  spanStarted(kind: SpanKind): void;
  eventRecorded(kind: SpanEventKind): void;
  tokensUsed(usage: TokenUsage): void;
};

function metered(sink: TraceSink, metrics: TraceMetrics): TraceSink {
  return {
    async startSpan(input) {
      const span = await sink.startSpan(input);
      metrics.spanStarted(input.kind);
      return span;
    },
    updateSpan: (span, update) => sink.updateSpan(span, update),
    async endSpan(span, end) {
      await sink.endSpan(span, end);
      if (end.usage) metrics.tokensUsed(end.usage);
    },
    async event(span, kind, payload, options) {
      const seq = await sink.event(span, kind, payload, options);
      if (seq > 0) metrics.eventRecorded(kind);
      return seq;
    },
    ...(sink.flushed && { flushed: () => sink.flushed!() }),
    ...(sink.inOrder && { inOrder: sink.inOrder.bind(sink) }),
    ...(sink.writeNow && { writeNow: () => sink.writeNow!() }),
    ...(sink.endSpanWith && {
      async endSpanWith(span, end, work) {
        const value = await sink.endSpanWith!(span, end, work);
        if (end.usage) metrics.tokensUsed(end.usage);
        return value;
      },
    }),
  };
}

/** The trace with its spans, events and model usage counted once they are committed. */
export function meteredTraceSink(trace: RuntimeTrace, metrics?: TraceMetrics): RuntimeTrace {
  if (!metrics) return trace;
  return {
    ...metered(trace, metrics),
    fenced: (fence) => metered(trace.fenced(fence), metrics),
    announce(changes) {
      trace.announce(changes);
      for (const change of changes) if (change?.type === "SPAN_STARTED" && change.span) metrics.spanStarted(change.span.kind as SpanKind);
    },
    exportEnded: (spanIds) => trace.exportEnded(spanIds),
  };
}
