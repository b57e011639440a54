// A run's cost (issue 40): the sum of its model spans' own cost, added in the transaction that
// ends each span, so Run.cost and a cap read one row and always equal the sum of the spans.
import type { Prisma } from "../../generated/prisma/client.js";
import { MAX_COST, toDecimal } from "../costs/pricing.js";
import type { SpanCost } from "../trace/trace-writes.js";

/**
 * Adds a model span's cost to its run; an unpriced span marks the run's cost as incomplete.
 * Resolves with the run's owner when its cost (or costUnpriced) may have changed — a run-list
 * change: announce it after commit — and null when nothing was added.
 */
export async function chargeRunIn(tx: Prisma.TransactionClient, runId: string, cost: SpanCost): Promise<string | null> {
  const amount = cost.amount === null ? null : String(cost.amount);
  // Saturating sums (MAX_COST): a charge past what the columns hold keeps them at it.
  const [run] = await tx.$queryRaw<{ ownerId: string }[]>`
    UPDATE run SET cost = CASE WHEN ${amount}::numeric IS NULL THEN cost ELSE LEAST(cost + ${amount}::numeric, ${MAX_COST}::numeric) END,
      cost_unpriced = cost_unpriced OR ${amount}::numeric IS NULL
    WHERE id = ${runId} RETURNING owner_id AS "ownerId"`;
  if (!run) throw new Error(`run ${runId} does not exist`);
  // The principal's spend today (UTC), in the same transaction: the daily cost limit reads one row.
  if (amount !== null) {
    await tx.$executeRaw`INSERT INTO principal_daily_cost (principal_id, day, cost)
      VALUES (${run.ownerId}, (now() AT TIME ZONE 'UTC')::date, LEAST(${amount}::numeric, ${MAX_COST}::numeric))
      ON CONFLICT (principal_id, day) DO UPDATE SET cost = LEAST(principal_daily_cost.cost + EXCLUDED.cost, ${MAX_COST}::numeric)`;
  }
  return cost.amount === null || !toDecimal(cost.amount).isZero() ? run.ownerId : null;
}
