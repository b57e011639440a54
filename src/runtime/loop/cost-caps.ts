// The cost caps before a model request (issue 40): the run's caps and spends, read with its
// requests at the top of the turn, against a bound on the request about to be sent — its
// context's estimated input tokens at the model's input price plus the output it may write
// (the context budget's reserved output, which the request then asks for at most) at its output
// price. A cap the request could cross stops the run (stopReason BUDGET) with the text it has so
// far; crossing confirmCostAbove records a COST_CONFIRMATION request and the run waits for its owner.
import { type CapVerdict, type CostState, capVerdict, hasCaps } from "../../domain/costs/caps.js";
import { type Decimal, toDecimal } from "../../domain/costs/pricing.js";
import { toStored } from "../../domain/text/stored-text.js";
import type { Transact } from "../../domain/transaction.js";
import type { LoggedMessage } from "../ports/conversation-log.js";
import type { SpanRef, TraceSink } from "../ports/trace-sink.js";
import type { ApprovalSettings } from "./held-calls.js";
import type { NextStep } from "./outcome.js";

/** Prices the bound of a request: null when the model has no price (its requests count nothing against a cap). */
export type CostBounds = {
  bound(request: { ownerId: string; model: string; inputTokens: number; outputTokens: number; at: Date }): Promise<Decimal | null>;
};

/**
 * The tool call id a cost confirmation is decided by (decideToolCall): `cost-confirmation:<threshold>`,
 * or with `:2`, `:3`… when the run used that id already (a call of the model's, or an earlier
 * request): a decision made on another request of the run never decides this one.
 */
export function costConfirmationId(threshold: string, used: ReadonlySet<string> = new Set()): string {
  const id = `cost-confirmation:${threshold}`;
  let unique = id;
  for (let n = 2; used.has(unique); n += 1) unique = `${id}:${n}`;
  return unique;
}

export type CapCheck = {
  run: { id: string; ownerId: string };
  costs: CostState | undefined;
  model: string;
  budget: { estimate: number; reservedOutput: number };
  span: SpanRef;
  sink: TraceSink;
  write: Transact;
  runLog: readonly LoggedMessage[];
  /** The call ids the run used (call-ids.ts): a confirmation's is none of them. */
  callIdsOfRun?: ReadonlySet<string>;
};

/**
 * Null: the request goes (with `maxOutputTokens` when a cap applies, so the bound holds); else
 * the step that ends the turn instead — a budget stop, or a wait for the owner's confirmation.
 */
export async function checkCostCaps(
  deps: { bounds?: CostBounds; approvals?: ApprovalSettings },
  check: CapCheck,
): Promise<{ step: NextStep | null; maxOutputTokens?: number }> {
  const { costs, budget } = check;
  if (!costs || !deps.bounds || !hasCaps(costs)) return { step: null };
  const at = new Date();
  const request = { ownerId: check.run.ownerId, model: check.model, inputTokens: budget.estimate, outputTokens: budget.reservedOutput, at };
  const bound = (await deps.bounds.bound(request)) ?? toDecimal(0);
  const verdict = capVerdict(costs, bound);
  if (verdict.kind === "GO") return { step: null, maxOutputTokens: budget.reservedOutput };
  await check.sink.event(check.span, "BUDGET", { cap: verdict.stop.cap, limit: verdict.stop.limit, spent: verdict.stop.spent, bound: verdict.stop.bound });
  if (verdict.kind === "CONFIRM" && deps.approvals) return { step: await askConfirmation(deps.approvals, check, verdict, at) };
  return { step: { type: "final", answer: textSoFar(check.runLog), budget: verdict.stop } };
}

/** What the run has written so far: its replies' text, in order (a reply that only called tools has none). */
export function textSoFar(runLog: readonly LoggedMessage[]): string {
  return runLog
    .filter((message) => message.role === "ASSISTANT" && message.content.trim() !== "")
    .map((message) => message.content)
    .join("\n\n");
}

/** Records the COST_CONFIRMATION request (with its APPROVAL_REQUESTED event) and makes the run wait for it. */
async function askConfirmation(approvals: ApprovalSettings, check: CapCheck, verdict: CapVerdict & { kind: "CONFIRM" }, at: Date): Promise<NextStep> {
  const { stop } = verdict;
  const toolCallId = costConfirmationId(stop.limit, check.callIdsOfRun);
  const last = check.runLog.at(-1);
  if (!last) throw new Error("a run asks to confirm its cost only after its question is in the log");
  const expiresAt = new Date(at.getTime() + approvals.timeoutMs);
  const recorded = await check.write((tx) =>
    approvals.store.request(tx, {
      runId: check.run.id,
      messageId: last.id,
      toolCallId,
      toolName: "confirm_cost",
      kind: "COST_CONFIRMATION",
      arguments: toStored(JSON.stringify(stop)),
      inputSchema: null,
      spanId: check.span.id,
      requestedAt: at,
      expiresAt,
    }),
  );
  await check.sink.event(check.span, "APPROVAL_REQUESTED", {
    approvalId: recorded.id,
    kind: "COST_CONFIRMATION",
    toolCallId,
    limit: stop.limit,
    spent: stop.spent,
    bound: stop.bound,
    expiresAt: expiresAt.toISOString(),
  });
  return { type: "waiting", toolCallIds: [toolCallId] };
}
