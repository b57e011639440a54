// How a turn ends (the loop as data, R1): the next step of a run, and the outcome an attempt
// settles with. Its own module so the run state, settling and spans can name an outcome without
// depending on the executor that produces it.
// The outcomes themselves are the run's vocabulary (domain/runs/vocabulary.ts).
import type { FailureReason, Outcome } from "../../domain/runs/vocabulary.js";

export type { FailureReason, Outcome };

export type NextStep = Outcome | { type: "run_again" };
