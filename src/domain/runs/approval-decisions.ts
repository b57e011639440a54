// Deciding approval requests in a caller's transaction, which holds the run row's lock: the
// rejection of a run's open requests when it ends (a row of transitions.ts says when), and the
// APPROVAL_DECIDED event every decision leaves on its call's span.
import type { ToolApproval } from "../../generated/prisma/client.js";
import { fromStored } from "../text/stored-text.js";
import { appendEventIn, type TraceChange } from "../trace/trace-writes.js";
import type { Tx } from "../transaction.js";

/**
 * Rejects every open request of a run with `reason`, in the caller's transaction, which holds the
 * run row's lock (a cancellation, the deadline, the run's end); returns the trace changes the
 * caller publishes after commit.
 */
export async function rejectOpenIn(tx: Tx, runId: string, reason: string, at: Date): Promise<TraceChange[]> {
  const open = await tx.toolApproval.findMany({ where: { runId, decision: null }, orderBy: [{ requestedAt: "asc" }, { id: "asc" }] });
  const changes: TraceChange[] = [];
  for (const approval of open) {
    const won = await tx.toolApproval.updateMany({ where: { id: approval.id, decision: null }, data: { decision: "REJECT", reason, decidedAt: at } });
    if (won.count === 0) continue;
    const recorded = await recordDecisionIn(tx, { ...approval, decision: "REJECT", decidedBy: null, reason, decidedAt: at });
    if (recorded) changes.push(recorded);
  }
  return changes;
}

/**
 * Records a decided request on its call's span: an APPROVAL_DECIDED event with the decision, who
 * took it (null: nobody, it expired or its run ended) and why; an EDIT also records the model's
 * arguments and the person's (JSON text each), so the span says what ran instead of what was
 * asked, and who changed it. A request without a span has no event.
 */
export async function recordDecisionIn(tx: Tx, approval: ToolApproval): Promise<TraceChange | null> {
  if (!approval.spanId || !approval.decision) return null;
  const at = approval.decidedAt ?? new Date();
  // A run's trace shares its id.
  return appendEventIn(
    tx,
    { id: approval.spanId, traceId: approval.runId },
    {
      kind: "APPROVAL_DECIDED",
      payload: {
        approvalId: approval.id,
        toolCallId: approval.toolCallId,
        toolName: approval.toolName,
        decision: approval.decision,
        decidedBy: approval.decidedBy,
        reason: approval.reason,
        decidedAt: at.toISOString(),
        ...(approval.decision === "EDIT"
          ? { originalArguments: fromStored(approval.arguments), editedArguments: fromStored(approval.editedArguments ?? "") }
          : {}),
      },
      at,
    },
  );
}
