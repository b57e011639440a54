// Caps that keep the work (issue 40): before every model request, what the run, its principal's
// UTC day and its workspace's UTC month have spent, plus a bound on the request about to be made,
// is compared with each cap. The first cap the request could cross stops the run (stopReason
// BUDGET, the text so far kept); crossing confirmCostAbove asks its owner first. Decimal
// arithmetic throughout: money is never a float.
import { z } from "zod";
import { type Decimal, toDecimal } from "./pricing.js";

/** A cost limit in USD: a positive decimal with at most 10 places (the DECIMAL(20,10) columns). */
export const costLimit = z
  .string()
  .trim()
  .regex(/^\d{1,10}(\.\d{1,10})?$/, "must be a decimal amount in USD, such as 2.50, with at most 10 decimal places")
  .refine((v) => Number(v) > 0, "must be more than 0");

/** The cost caps checked before every model request. */
export type CostCap = "MAX_COST" | "DAILY_COST_LIMIT" | "MONTHLY_BUDGET" | "CONFIRM_COST_ABOVE";

/** A cap the run stopped at: which, its limit, what was spent and the bound on the request it did not make (USD, decimal text). */
export type BudgetStop = { cap: CostCap; limit: string; spent: string; bound: string };

/** A spend and the limit it is held to (USD). */
export type Spend = { limit: Decimal; spent: Decimal };

/** Where the owner's decision on crossing confirmCostAbove stands (the run's COST_CONFIRMATION request). */
export type Confirmation = "NONE" | "WAITING" | "APPROVED" | "REJECTED";

/** The run's caps and what has been spent against each, read with the run's requests before a model request. */
export type CostState = {
  /** The run's cost so far (Run.cost). */
  spent: Decimal;
  maxCost: Decimal | null;
  confirmCostAbove: Decimal | null;
  confirmation: Confirmation;
  /** The principal's spend today (UTC) against its daily cost limit; null when it has none. */
  daily: Spend | null;
  /** The workspace's spend this UTC month against its monthly budget; null when it has none. */
  monthly: Spend | null;
};

/** What to do before the request: go on, stop at a cap, or ask the owner to confirm. */
export type CapVerdict = { kind: "GO" } | { kind: "STOP"; stop: BudgetStop } | { kind: "CONFIRM"; stop: BudgetStop };

const GO: CapVerdict = { kind: "GO" };

const stopAt = (cap: CostCap, limit: Decimal, spent: Decimal, bound: Decimal): BudgetStop => ({
  cap,
  limit: limit.toString(),
  spent: spent.toString(),
  bound: bound.toString(),
});

/** Whether any cap applies (none: the request goes without pricing its bound). */
export const hasCaps = (state: CostState): boolean =>
  state.maxCost !== null || state.confirmCostAbove !== null || state.daily !== null || state.monthly !== null || state.confirmation === "REJECTED";

/**
 * The verdict on a request whose cost is at most `bound`: a cap is crossed when what it counts
 * plus the bound is above it. The run's own caps first, then the principal's day, then the
 * workspace's month; confirmCostAbove last (a hard cap the request would cross stops the run
 * rather than ask about a soft one). Approved once, a confirmation is not asked again.
 */
export function capVerdict(state: CostState, bound: Decimal): CapVerdict {
  const { spent } = state;
  if (state.confirmation === "REJECTED" && state.confirmCostAbove) {
    return { kind: "STOP", stop: stopAt("CONFIRM_COST_ABOVE", state.confirmCostAbove, spent, bound) };
  }
  if (state.maxCost && spent.plus(bound).greaterThan(state.maxCost)) return { kind: "STOP", stop: stopAt("MAX_COST", state.maxCost, spent, bound) };
  const scopes = [
    ["DAILY_COST_LIMIT", state.daily],
    ["MONTHLY_BUDGET", state.monthly],
  ] as const;
  for (const [cap, spend] of scopes) {
    if (spend?.spent.plus(bound).greaterThan(spend.limit)) return { kind: "STOP", stop: stopAt(cap, spend.limit, spend.spent, bound) };
  }
  const confirm = state.confirmCostAbove;
  if (confirm && state.confirmation !== "APPROVED" && spent.plus(bound).greaterThan(confirm)) {
    return { kind: "CONFIRM", stop: stopAt("CONFIRM_COST_ABOVE", confirm, spent, bound) };
  }
  return GO;
}

/** Parses a decimal column read as text (null stays null). */
export const decimalOrNull = (value: string | null | undefined): Decimal | null => (value === null || value === undefined ? null : toDecimal(value));
