// The bound on what a model request can cost, checked against the cost caps before it is sent:
// every input token at the highest of the model's input rates (input, cached, cache write) plus
// every output token it may write at the higher of its output and reasoning rates — so whatever
// the reply's usage turns out to be, its cost is at most the bound (given the input estimate).
import type { PrismaClient } from "../../generated/prisma/client.js";
import { priceAt } from "./price-book.js";
import { type Decimal, type DecimalInput, priceUsage, toDecimal } from "./pricing.js";

export type BoundRequest = { ownerId: string; model: string; inputTokens: number; outputTokens: number; at: Date };

const highest = (rates: (DecimalInput | null | undefined)[]): Decimal =>
  rates
    .filter((rate): rate is DecimalInput => rate !== null && rate !== undefined)
    .map(toDecimal)
    .reduce((a, b) => (b.greaterThan(a) ? b : a));

/** Prices request bounds from the price table; null when the model has no price at the time. */
export function requestBounds(prisma: PrismaClient): { bound(request: BoundRequest): Promise<Decimal | null> } {
  return {
    async bound({ ownerId, model, inputTokens, outputTokens, at }) {
      const price = await priceAt(prisma, { principalId: ownerId, model, at });
      if (!price) return null;
      const rates = {
        inputPerMillion: highest([price.inputPerMillion, price.cachedInputPerMillion, price.cacheWritePerMillion]),
        outputPerMillion: highest([price.outputPerMillion, price.reasoningPerMillion]),
      };
      return priceUsage({ input: inputTokens, output: outputTokens, cached: 0, reasoning: 0 }, rates).cost;
    },
  };
}
