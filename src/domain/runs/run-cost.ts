// A run's cost (issue 40): the sum of its model spans' own cost, added in the transaction that
// ends each span, so Run.cost and a cap read one row and always equal the sum of the spans.
import type { Prisma } from "../../generated/prisma/client.js";
import type { SpanCost } from "../trace/trace-writes.js";

/** Adds a model span's cost to its run; an unpriced span marks the run's cost as incomplete. */
export async function chargeRunIn(tx: Prisma.TransactionClient, runId: string, cost: SpanCost): Promise<void> {
  await tx.run.update({
    where: { id: runId },
    data: cost.amount === null ? { costUnpriced: true } : { cost: { increment: cost.amount } },
    select: { id: true },
  });
}
