// Why a run ended (Run.stopReason): the row of transitions.ts that ended it names the reason, or
// (the settle row) the attempt's outcome does. Every row that takes a run to a terminal status
// from one that is not sets it; a test walks the table.
import type { Transition } from "./transition-row.js";
import type { FailureReason, Outcome, RunStopReason } from "./vocabulary.js";

/** The terminal statuses: a run in one of them has ended for good. */
export const TERMINAL_STATUSES = ["SUCCEEDED", "FAILED", "CANCELLED", "TIMED_OUT"] as const;

/** Whether a run in `status` has ended for good. */
export const isTerminal = (status: string): boolean => (TERMINAL_STATUSES as readonly string[]).includes(status);

const OF_FAILURE: Record<FailureReason, RunStopReason> = {
  MAX_TURNS: "MAX_TURNS",
  TOKEN_BUDGET: "TOKEN_BUDGET",
  CONTEXT_OVERFLOW: "CONTEXT_OVERFLOW",
  MODEL_ERROR: "MODEL_ERROR",
  INTERNAL_ERROR: "INTERNAL_ERROR",
};

/** The reason an attempt's outcome ends its run with (the settle row). */
export function stopReasonOfOutcome(outcome: Outcome): RunStopReason {
  switch (outcome.type) {
    case "final":
      return outcome.budget ? "BUDGET" : outcome.concluded ? "CONCLUDED" : "ANSWERED";
    case "failed":
      return OF_FAILURE[outcome.reason];
    case "interrupted":
      // A stop that settles: cancelled, or the deadline; anything else settling is Dossier's failure.
      return outcome.status === "CANCELLED" ? "CANCELLED" : outcome.status === "TIMED_OUT" ? "DEADLINE" : "INTERNAL_ERROR";
    case "waiting":
      throw new Error("a run waiting for decisions has not ended");
    default: {
      const unknown: never = outcome;
      throw new Error(`unknown outcome ${JSON.stringify(unknown)}`);
    }
  }
}

/** The reason `row` writes on the run (null: it leaves stopReason as it is). */
export function stopReasonAfter(row: Transition, outcome?: Outcome): RunStopReason | null {
  if (row.stopReason === "KEEP") return null;
  if (row.stopReason !== "OUTCOME") return row.stopReason;
  if (!outcome) throw new Error(`${row.name} needs the attempt's outcome`);
  return stopReasonOfOutcome(outcome);
}
