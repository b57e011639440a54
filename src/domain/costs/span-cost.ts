// The cost of model calls the trace folded into a kept span (past MAX_TRACE_RECORDS), priced at
// the price its run's owner pays for the model at the end time (price-book.ts). A kept span's own
// cost is priced by the statement that ends it (domain/runs/span-end-statement.ts).
import type { Prisma } from "../../generated/prisma/client.js";
import type { SpanCost } from "../trace/trace-writes.js";
import { priceAt } from "./price-book.js";
import { Decimal, MAX_COST, type PricedUsage, priceUsage } from "./pricing.js";

/** The attribute a model call's span names its model with (the request's model). */
export const REQUEST_MODEL_ATTRIBUTE = "gen_ai.request.model";

/**
 * What a model call the trace did not keep (past MAX_TRACE_RECORDS) costs: its whole usage at
 * `model`'s price, added to the cost of the kept span it was folded into. Null when that span is
 * gone (its run was deleted).
 */
export async function priceFoldedIn(
  tx: Prisma.TransactionClient,
  keptSpan: { id: string },
  model: string | null,
  usage: PricedUsage,
  at: Date,
): Promise<{ runId: string; cost: SpanCost } | null> {
  const [row] = await tx.$queryRaw<{ runId: string; ownerId: string }[]>`
    SELECT r.id AS "runId", r.owner_id AS "ownerId"
    FROM span s JOIN trace t ON t.id = s.trace_id JOIN run r ON r.id = t.run_id
    WHERE s.id = ${keptSpan.id}`;
  if (!row) return null;
  const price = model === null ? null : await priceAt(tx, { principalId: row.ownerId, model, at });
  const amount = price ? Decimal.min(priceUsage(usage, price).cost, MAX_COST).toFixed() : null;
  await tx.$executeRaw`
    UPDATE span SET cost = CASE WHEN ${amount}::numeric IS NULL THEN cost ELSE LEAST(COALESCE(cost, 0) + ${amount}::numeric, ${MAX_COST}::numeric) END,
      cost_unpriced = cost_unpriced OR ${amount}::numeric IS NULL
    WHERE id = ${keptSpan.id}`;
  return { runId: row.runId, cost: { amount } };
}
