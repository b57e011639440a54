// Every way a run ends names why: each row of the transition table that takes a run from a
// status that has not ended to one that has sets Run.stopReason, for every outcome it settles.
import { describe, expect, it } from "vitest";
import { stopReasonAfter, TERMINAL_STATUSES } from "../../src/domain/runs/stop-reasons.js";
import type { Transition } from "../../src/domain/runs/transition-row.js";
import { TRANSITIONS } from "../../src/domain/runs/transitions.js";
import type { Outcome, RunStatusName } from "../../src/domain/runs/vocabulary.js";
import { RunStopReason } from "../../src/generated/prisma/enums.js";

const ended = (status: RunStatusName | "OUTCOME"): boolean => status === "OUTCOME" || (TERMINAL_STATUSES as readonly string[]).includes(status);

/** Every outcome an attempt settles with, one of each kind and variant. */
const OUTCOMES: Outcome[] = [
  { type: "final", answer: "an answer" },
  { type: "final", answer: "concluded", concluded: true },
  { type: "final", answer: "so far", budget: { cap: "MAX_COST", limit: "1", spent: "0.9", bound: "0.2" } },
  { type: "failed", reason: "MAX_TURNS", message: "" },
  { type: "failed", reason: "TOKEN_BUDGET", message: "" },
  { type: "failed", reason: "CONTEXT_OVERFLOW", message: "" },
  { type: "failed", reason: "MODEL_ERROR", message: "" },
  { type: "failed", reason: "INTERNAL_ERROR", message: "" },
  { type: "interrupted", status: "CANCELLED" },
  { type: "interrupted", status: "CANCELLED", afterTurn: true },
  { type: "interrupted", status: "TIMED_OUT" },
];

const rows = Object.values(TRANSITIONS) as Transition[];
const ending = rows.filter((row) => ended(row.to) && row.from.some((status) => !ended(status)));

describe("Run.stopReason over the transition table", () => {
  it("finds the rows that end a run", () => {
    expect(ending.map((row) => row.name).sort()).toEqual(["budgetStop", "cancel", "conclude", "settle", "stopAfterTurn", "timeOutWaiting"]);
  });

  it.each(ending.map((row) => [row.name, row] as const))("%s sets a stop reason for every outcome", (_name, row) => {
    for (const outcome of OUTCOMES) {
      const reason = stopReasonAfter(row, outcome);
      expect(reason, `${row.name} with ${JSON.stringify(outcome)}`).not.toBeNull();
      expect(Object.values(RunStopReason)).toContain(reason);
    }
  });

  it("rows that do not end a run leave it unchanged", () => {
    for (const row of rows.filter((r) => !ending.includes(r))) expect(stopReasonAfter(row), row.name).toBeNull();
  });

  it("the settle row names the outcome", () => {
    const reasons = OUTCOMES.map((outcome) => stopReasonAfter(TRANSITIONS.settle, outcome));
    expect(reasons).toEqual([
      "ANSWERED",
      "CONCLUDED",
      "BUDGET",
      "MAX_TURNS",
      "TOKEN_BUDGET",
      "CONTEXT_OVERFLOW",
      "MODEL_ERROR",
      "INTERNAL_ERROR",
      "CANCELLED",
      "CANCELLED",
      "DEADLINE",
    ]);
  });

  it("every reason is reachable", () => {
    const reachable = new Set(ending.flatMap((row) => OUTCOMES.map((outcome) => stopReasonAfter(row, outcome))));
    expect([...reachable].sort()).toEqual(Object.values(RunStopReason).sort());
  });
});
