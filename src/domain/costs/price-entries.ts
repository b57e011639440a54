// What a price entry is made of, checked in one place for every way one arrives: setModelPrice,
// the operator's MODEL_PRICES_FILE and `npm run prices:set`. Prices are decimal strings (a
// number is taken too, from JSON), never negative, with at most 10 digits before the point and
// 10 after it (the columns are DECIMAL(20,10)).
import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { ModelPrice, Prisma } from "../../generated/prisma/client.js";
import { nonBlank, parseInput } from "../validation.js";

/** The longest model name a price can be given for. */
export const MODEL_NAME_MAX = 200;

const DECIMAL = /^\d{1,10}(\.\d{1,10})?$/;

/** A price per million tokens: a non-negative decimal, as a string. */
export const decimalPrice = z.union([z.string(), z.number()]).transform((value, context) => {
  const text = String(value).trim();
  if (/^-/.test(text) && DECIMAL.test(text.slice(1))) {
    context.addIssue({ code: "custom", message: "must not be negative" });
    return z.NEVER;
  }
  if (!DECIMAL.test(text)) {
    context.addIssue({
      code: "custom",
      message: `must be a decimal such as "2.50" (at most 10 digits before the point and 10 after it), not ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  return text;
});

const optionalPrice = decimalPrice.nullish().transform((value) => value ?? null);

export const priceEntrySchema = z.strictObject({
  model: nonBlank(MODEL_NAME_MAX),
  effectiveFrom: z.coerce.date().nullish(),
  inputPerMillion: decimalPrice,
  cachedInputPerMillion: optionalPrice,
  cacheWritePerMillion: optionalPrice,
  outputPerMillion: decimalPrice,
  reasoningPerMillion: optionalPrice,
});

export type PriceEntryInput = z.input<typeof priceEntrySchema>;
/** A checked entry; `effectiveFrom` absent means from now. */
export type PriceEntry = z.output<typeof priceEntrySchema>;

/** Checks an entry: a ValidationError naming every field that is wrong. */
export const parsePriceEntry = (input: unknown): PriceEntry => parseInput(priceEntrySchema, input);

/**
 * Sets an entry: whoever's (`principalId`, null for the operator's) entry for the model from that
 * time is created or replaced, in one statement (two processes loading the same price file at
 * start both succeed). The unique key treats a missing principal as equal (NULLS NOT DISTINCT).
 */
export async function upsertPriceEntry(
  db: Pick<Prisma.TransactionClient, "$queryRaw">,
  principalId: string | null,
  entry: PriceEntry,
  now: Date,
): Promise<ModelPrice> {
  const effectiveFrom = entry.effectiveFrom ?? now;
  const [row] = await db.$queryRaw<ModelPrice[]>`
    INSERT INTO model_price (id, principal_id, model, effective_from, input_per_million, cached_input_per_million,
                             cache_write_per_million, output_per_million, reasoning_per_million)
    VALUES (${randomUUID()}, ${principalId}, ${entry.model}, ${effectiveFrom}, ${entry.inputPerMillion}::numeric, ${entry.cachedInputPerMillion}::numeric,
            ${entry.cacheWritePerMillion}::numeric, ${entry.outputPerMillion}::numeric, ${entry.reasoningPerMillion}::numeric)
    ON CONFLICT (principal_id, model, effective_from) DO UPDATE SET
      input_per_million = EXCLUDED.input_per_million, cached_input_per_million = EXCLUDED.cached_input_per_million,
      cache_write_per_million = EXCLUDED.cache_write_per_million, output_per_million = EXCLUDED.output_per_million,
      reasoning_per_million = EXCLUDED.reasoning_per_million
    RETURNING id, principal_id AS "principalId", model, effective_from AS "effectiveFrom", input_per_million AS "inputPerMillion",
      cached_input_per_million AS "cachedInputPerMillion", cache_write_per_million AS "cacheWritePerMillion",
      output_per_million AS "outputPerMillion", reasoning_per_million AS "reasoningPerMillion", created_at AS "createdAt"`;
  return row!;
}

/** Sets the operator's entries (MODEL_PRICES_FILE at start, npm run prices:set). */
export async function setOperatorPrices(db: Pick<Prisma.TransactionClient, "$queryRaw">, entries: readonly PriceEntry[], now: Date): Promise<ModelPrice[]> {
  const set: ModelPrice[] = [];
  for (const entry of entries) set.push(await upsertPriceEntry(db, null, entry, now));
  return set;
}
