// Which price a model call is charged at (issue 40): the entry for the model that is effective at
// the time the call ended. A principal's own entries (setModelPrice) win over the operator's
// (MODEL_PRICES_FILE, npm run prices:set); among them the latest with effectiveFrom <= t.
import type { ModelPrice, Prisma } from "../../generated/prisma/client.js";

type Db = Pick<Prisma.TransactionClient, "modelPrice">;

/** The price `principalId` pays for `model` at `at`, or null when the model has no price then. */
export function priceAt(db: Db, query: { principalId: string | null; model: string; at: Date }): Promise<ModelPrice | null> {
  const whose = query.principalId === null ? [{ principalId: null }] : [{ principalId: query.principalId }, { principalId: null }];
  return db.modelPrice.findFirst({
    where: { model: query.model, effectiveFrom: { lte: query.at }, OR: whose },
    // The principal's own entries first (nulls last), then the latest.
    orderBy: [{ principalId: { sort: "asc", nulls: "last" } }, { effectiveFrom: "desc" }],
  });
}
