// How a turn ends (the loop as data, R1): the next step of a run, and the outcome an attempt
// settles with. Its own module so the run state, settling and spans can name an outcome without
// depending on the executor that produces it.
import type { StopReason } from "./stop.js";

/** Why a run failed: a limit, the model's request, or Dossier itself (INTERNAL_ERROR: a bug or the database). */
export type FailureReason = "MAX_TURNS" | "TOKEN_BUDGET" | "CONTEXT_OVERFLOW" | "MODEL_ERROR" | "INTERNAL_ERROR";

export type NextStep =
  | { type: "final"; answer: string }
  | { type: "run_again" }
  /** `retryAfterMs`: the model endpoint asked to wait (HANDED_BACK): the run resumes no sooner. */
  | { type: "interrupted"; status: StopReason; retryAfterMs?: number }
  /** Tool calls of the step wait for a person's decision: the run waits (WAITING) with no attempt holding it. */
  | { type: "waiting"; toolCallIds: string[] }
  | { type: "failed"; reason: FailureReason; message: string };

export type Outcome = Exclude<NextStep, { type: "run_again" }>;
