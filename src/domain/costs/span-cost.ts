// The cost of a model call, priced when its span ends (issue 40): the span's own usage at the
// price its run's owner pays for the requested model at the end time (price-book.ts). Each span
// is priced at its own end, so a price change effective mid-run prices the later calls anew.
import type { Prisma } from "../../generated/prisma/client.js";
import type { SpanCost } from "../trace/trace-writes.js";
import { priceAt } from "./price-book.js";
import { type PricedUsage, priceUsage } from "./pricing.js";

/** The attribute a model call's span names its model with (the request's model). */
export const REQUEST_MODEL_ATTRIBUTE = "gen_ai.request.model";

/**
 * What a span ending with `usage` at `at` costs, and the run it is charged to; null for a span
 * that is not a model call. An unpriced model gives `amount: null`, never zero.
 */
export async function priceSpanIn(
  tx: Prisma.TransactionClient,
  span: { id: string },
  usage: PricedUsage,
  at: Date,
): Promise<{ runId: string; cost: SpanCost } | null> {
  const [row] = await tx.$queryRaw<{ model: string | null; runId: string; ownerId: string }[]>`
    SELECT s.attributes ->> ${REQUEST_MODEL_ATTRIBUTE} AS model, r.id AS "runId", r.owner_id AS "ownerId"
    FROM span s JOIN trace t ON t.id = s.trace_id JOIN run r ON r.id = t.run_id
    WHERE s.id = ${span.id} AND s.kind = 'MODEL_CALL'`;
  if (!row) return null;
  const price = row.model === null ? null : await priceAt(tx, { principalId: row.ownerId, model: row.model, at });
  return { runId: row.runId, cost: { amount: price ? priceUsage(usage, price).cost.toFixed() : null } };
}
