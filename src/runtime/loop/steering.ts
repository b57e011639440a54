// A person's steering inputs (steerRun, issue 38) enter the log right before the model request
// that reads them: a turn's, or the one last request of a CONCLUDE stop (conclude.ts). They go in
// the attempt's fenced transaction that marks them DELIVERED, with a STEERED event on `span`, the
// span of the turn making the request; steering writes them in a transaction of its own, after
// the span's start (`write` is ordered). Whether inputs wait is read with the run's requests before
// each model request; one stored after that read is heard announced (steerRun publishes it, and
// the worker executing the run hears it on any instance) rather than read again before each request.
import type { Transact } from "../ports/attempt-fence.js";
import type { RunState } from "../ports/run-state.js";
import type { SpanRef } from "../ports/trace-sink.js";
import type { AttemptScope } from "./attempt.js";

/** Delivers the run's pending inputs into the log as USER entries; returns how many. */
export function deliverSteering(
  runs: Pick<RunState, "deliverInputs">,
  { run, write, log }: Pick<AttemptScope, "run" | "write" | "log">,
  span: SpanRef,
): Promise<number> {
  const append = (into: Transact, texts: string[]) =>
    log.append(
      into,
      texts.map((content) => ({ role: "USER" as const, content })),
    );
  return runs.deliverInputs(write, { runId: run.id, span, append });
}

/**
 * Whether the next model request delivers steering inputs: they waited when the run's requests were
 * read, or one was heard announced since the last request (asking clears what was heard; an input
 * announced after this is delivered with the request after).
 */
export function steeringWaits(turn: { inputsPending?: boolean; steered?: () => boolean }): boolean {
  const heard = turn.steered?.() ?? false;
  return heard || Boolean(turn.inputsPending);
}
