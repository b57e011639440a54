// The operator's model prices, MODEL_PRICES_FILE (README "Cost and budgets"): read where they are
// set — when a process opens its database and by `npm run prices:set` — not with the settings, so
// the programs that only read settings (the MCP server) carry nothing of the price rules.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { ConfigError } from "../config-rules.js";
import { type PriceEntry, priceEntrySchema } from "../domain/costs/price-entries.js";

const modelPricesFile = z.strictObject({ prices: z.array(priceEntrySchema) });

/** An operator entry without `effectiveFrom` prices every call until a later entry: it is effective from the epoch. */
export const ALWAYS = new Date(0);

/**
 * Reads MODEL_PRICES_FILE: `{ "prices": [ { "model", "effectiveFrom"?, "inputPerMillion",
 * "cachedInputPerMillion"?, "cacheWritePerMillion"?, "outputPerMillion", "reasoningPerMillion"? } ] }`,
 * prices as decimal strings per million tokens (USD).
 */
export function readModelPrices(file: string, name = "MODEL_PRICES_FILE"): PriceEntry[] {
  const where = `${name}=${JSON.stringify(file)}`;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new ConfigError([`${where}: cannot be read as JSON (${(error as Error).message})`]);
  }
  const parsed = modelPricesFile.safeParse(json);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${where}: [${issue.path.join(".") || "(root)"}] ${issue.message}`));
  }
  return parsed.data.prices.map((entry) => ({ ...entry, effectiveFrom: entry.effectiveFrom ?? ALWAYS }));
}
