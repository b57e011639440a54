// Every span of the runtime is started and ended the same way: `withSpan` ends it whatever
// happens, and how a step of the loop ends its span is decided in one place (stepSpanStatus).
import type { TokenUsage } from "../ports/model.js";
import type { Attributes, SpanRef, SpanStatus, TraceSink } from "../ports/trace-sink.js";
import type { NextStep } from "./outcome.js";
import { stoppedSpanStatus } from "./stop.js";

/** How a span ends: its status, and attributes and model usage recorded with the end. */
export type SpanEnding = { status: SpanStatus; attributes?: Attributes; usage?: TokenUsage };

export type SpanOptions<T> = {
  /** How a result ends the span; OK by default. Null: the caller ends it (SpanEnding in hand). */
  ended?: (result: T) => SpanEnding | null;
  /**
   * How a failure ends the span (it may record events on the span first); by default ERROR with
   * the message as the `error` attribute. The failure is rethrown either way.
   */
  failed?: (error: unknown, span: SpanRef) => SpanEnding | Promise<SpanEnding>;
};

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Runs `work` inside a span that is always ended: as `options` say, OK or ERROR by default. */
export async function withSpan<T>(
  sink: TraceSink,
  input: Parameters<TraceSink["startSpan"]>[0],
  work: (span: SpanRef) => Promise<T>,
  options: SpanOptions<T> = {},
): Promise<T> {
  const span = await sink.startSpan(input);
  try {
    const result = await work(span);
    const ending = options.ended ? options.ended(result) : { status: "OK" as const };
    if (ending) await sink.endSpan(span, ending);
    return result;
  } catch (error) {
    await sink.endSpan(span, options.failed ? await options.failed(error, span) : { status: "ERROR", attributes: { error: message(error) } });
    throw error;
  }
}

/**
 * Records an event without waiting for its write when the sink writes behind the work (an
 * attempt's): a failed write stops the attempt through the sink's next call or `flushed`.
 */
export async function note(sink: TraceSink, ...event: Parameters<TraceSink["event"]>): Promise<void> {
  const written = sink.event(...event);
  if (sink.flushed) written.catch(() => undefined);
  else await written;
}

/** The status of a span whose work failed: a stop of the run (see stop.ts), else ERROR. */
export const failedSpanStatus = (signal: AbortSignal | undefined): SpanStatus => (signal?.aborted ? stoppedSpanStatus(signal) : "ERROR");

/**
 * The status a span ends with for a step of the loop (a turn, the attempt, the run); `stopped`
 * is what an interruption ends it as.
 */
export function stepSpanStatus(step: NextStep, stopped: SpanStatus): SpanStatus {
  switch (step.type) {
    case "final":
    case "run_again":
    case "waiting":
      return "OK";
    case "failed":
      return "ERROR";
    case "interrupted":
      return stopped;
    default: {
      const unknown: never = step;
      throw new Error(`unknown step ${JSON.stringify(unknown)}`);
    }
  }
}
