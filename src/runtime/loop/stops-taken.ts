// How an attempt takes the stops that let a run end with what it has (cancelRun's AFTER_TURN and
// CONCLUDE modes), heard announced or read before a model request. AFTER_TURN: the turn's calls
// are over and logged, and the run stops before its next model request. CONCLUDE: whatever the stop
// cut off is recorded as interrupted (R7), then one last model request without tools asks for the
// best answer from the evidence so far (conclude.ts); a step a CONCLUDE stop cut short concludes too.
import type { ContextBuilder } from "../memory/context-builder.js";
import type { AttemptContext, AttemptScope, ExecutorDeps, Turn } from "./attempt.js";
import { concludingRequest } from "./conclude.js";
import type { NextStep, Outcome } from "./outcome.js";
import { recordRepairs } from "./repairs.js";
import { failedSpanStatus, stepSpanStatus, withSpan } from "./spans.js";
import { stoppedSpanStatus } from "./stop.js";

/** What the attempt knows of a CONCLUDE stop: the attempt's signals, and whether its concluding request began. */
export type Stops = { attempt: AttemptContext; concluding: boolean };

/** What the concluding request is made with: the executor's own parts and its context builder. */
export type ConcludeDeps = ExecutorDeps & { context: ContextBuilder };

/** AFTER_TURN: the turn's calls finished and are logged; the run stops before its next model request. */
export async function stopAfterTurn(turn: Turn): Promise<Outcome> {
  await turn.scope.sink.event(turn.scope.span, "STOP_REQUESTED", { mode: "AFTER_TURN", taken: "before the next model request" });
  return { type: "interrupted", status: "CANCELLED", afterTurn: true };
}

/** A step that ended the loop, unless a CONCLUDE stop cut it short: then the attempt concludes. */
export async function unlessConcluding(deps: ConcludeDeps, stops: Stops, turn: Turn, step: NextStep): Promise<Outcome> {
  const { attempt } = stops;
  if (step.type === "run_again") throw new Error("a step that runs again does not end the loop");
  // A complete answer stands; a stop of the attempt itself (NOW, the deadline) is not a conclusion.
  if (step.type === "final" || !attempt.conclude?.aborted || attempt.signal.aborted) return step;
  return conclude(deps, stops, turn);
}

/**
 * CONCLUDE: whatever the stop cut off is recorded as interrupted (R7: the log stays a valid
 * request), then one last model request, offered no tools, asks for the best answer from the
 * evidence gathered so far. Only the attempt's own signal stops it (NOW escalates, the deadline).
 */
export async function conclude(deps: ConcludeDeps, stops: Stops, turn: Turn): Promise<Outcome> {
  stops.concluding = true;
  const scope: AttemptScope = { ...turn.scope, signal: stops.attempt.signal };
  await scope.sink.event(scope.span, "STOP_REQUESTED", { mode: "CONCLUDE", taken: "one last model request, without tools" });
  await recordRepairs(scope, new Set());
  // The caps read now: the work the stop cut off may have spent since the turn began; and the
  // steering inputs waiting, which the last request delivers as any turn's does.
  const { costs, inputs } = await deps.runs.requests(turn.scope.run.id);
  const last: Turn = { ...turn, scope, tools: new Map(), costs, inputsPending: inputs };
  const { signal, sink } = scope;
  return withSpan(
    sink,
    { traceId: scope.span.traceId, parent: scope.span, kind: "TURN", name: `turn ${turn.index + 1} (conclude)` },
    (span) => concludingRequest(deps, last, span),
    {
      ended: (step) => ({ status: stepSpanStatus(step, stoppedSpanStatus(signal)) }),
      failed: () => ({ status: failedSpanStatus(signal) }),
    },
  );
}
