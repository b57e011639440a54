// A stop that ends a run with what it has (cancelRun's AFTER_TURN and CONCLUDE) and held calls:
// calls held for a decision never began, so a stop known before one would begin — recorded on the
// run when the attempt read its requests with the claim, or heard announced since — means it
// does not execute, whatever was decided. Each such call gets a result the model sees, logged as
// any result is (STOPPED_RESULT), and the run then stops as the stop says: AFTER_TURN ends it
// before its next model request, CONCLUDE makes its one last request without tools. A call a
// person rejected keeps the decline (the person's reason). A call whose execution already began
// (its approval marked begun) is not a held call: it is never run again, and repair answers it.
import type { CancelMode } from "../../domain/runs/vocabulary.js";
import type { GateVerdict, ToolGate } from "../tools/execute-tool-calls.js";
import type { TraceSink } from "../ports/trace-sink.js";
import type { AttemptContext } from "./attempt.js";
import type { HeldStep } from "./held-calls.js";

/** The stops a held call does not execute under (NOW stops the attempt itself). */
export type HeldStop = "CONCLUDE" | "AFTER_TURN";

/** What the model sees for a held call a stop kept from executing. */
export function stoppedResult(mode: HeldStop): string {
  return `[not executed: the run was stopped (${mode}) before this call ran]`;
}

/** The stop heard announced (or found by a lease renewal) since the attempt's claim, if any. */
export function heardStop(attempt: Pick<AttemptContext, "conclude" | "afterTurn">): HeldStop | null {
  if (attempt.conclude?.aborted) return "CONCLUDE";
  if (attempt.afterTurn?.aborted) return "AFTER_TURN";
  return null;
}

/** The stop known before a held step begins: the one its requests, read with the claim, show, else one heard since. */
export function stopBeforeHeld(recorded: CancelMode | null, attempt: Pick<AttemptContext, "conclude" | "afterTurn">): HeldStop | null {
  if (recorded === "CONCLUDE" || recorded === "AFTER_TURN") return recorded;
  return heardStop(attempt);
}

/**
 * The held step's gate, asked `stopped()` as each call would begin: once a stop is known, a call
 * that no person rejected is declined with the stopped result (its span says so); otherwise `gate` decides.
 */
export function unlessStopped(gate: ToolGate, step: HeldStep, stopped: () => HeldStop | null, sink: TraceSink): ToolGate {
  const decisions = new Map(step.approvals.filter((a) => a.messageId === step.messageId).map((a) => [a.toolCallId, a.decision]));
  return async (call, span): Promise<GateVerdict> => {
    const mode = stopped();
    const decision = decisions.get(call.id) ?? null;
    if (mode === null || decision === "REJECT") return gate(call, span);
    await sink.updateSpan(span, { attributes: { "dossier.approval": decision ?? "REQUESTED", "dossier.approval.notExecuted": `run stopped (${mode})` } });
    return { type: "decline", output: stoppedResult(mode) };
  };
}
