// What one model call cost, from its own usage and the price of its model (issue 40). Pure and
// decimal (decimal.js), never floating point. Usage is priced as a decomposition: cached input
// tokens (and cache writes) are PART of the input tokens, reasoning tokens PART of the output
// tokens, so each token is charged once, at its own rate — never added on top.
import { Decimal as DecimalJs } from "decimal.js";

/** decimal.js with room for every product exactly (a token count times a DECIMAL(20,10) price). */
export const Decimal = DecimalJs.clone({ precision: 60, rounding: DecimalJs.ROUND_HALF_UP });
export type Decimal = DecimalJs;

/** Decimal places a cost is kept to (the columns are DECIMAL(20,10)): span costs sum exactly to the run's. */
export const COST_SCALE = 10;
/**
 * The most a cost column holds (DECIMAL(20,10)): a cost or a sum of costs past it is kept at it
 * (saturates), so a reply reporting billions of tokens of a dear model is charged what can be
 * stored — far past any cap — rather than failing the write that would charge it.
 */
export const MAX_COST = "9999999999.9999999999";
/** Every cost is in this currency. */
export const COST_CURRENCY = "USD";

/** A decimal as Dossier receives it: a decimal string, a decimal.js or Prisma Decimal. */
export type DecimalInput = string | number | Decimal | { toFixed(): string };

/** Model-reported tokens of one call; `cached` and `cacheWrite` are part of `input`, `reasoning` part of `output`. */
export type PricedUsage = { input: number; output: number; cached: number; reasoning: number; cacheWrite?: number };

/** A price per million tokens (USD). A missing cached or cache-write price is the input price, a missing reasoning price the output price. */
export type Price = {
  inputPerMillion: DecimalInput;
  cachedInputPerMillion?: DecimalInput | null;
  cacheWritePerMillion?: DecimalInput | null;
  outputPerMillion: DecimalInput;
  reasoningPerMillion?: DecimalInput | null;
};

const MILLION = new Decimal(1_000_000);

/** A decimal input as decimal.js (Prisma's Decimal is another class of the same library). */
export const toDecimal = (value: DecimalInput): Decimal => new Decimal(String(value));

const tokens = (count: number | undefined): number => Math.max(0, Math.trunc(count ?? 0));

/**
 * The tokens of `usage` each rate applies to, capped as priceUsage caps them: `input` and `output`
 * are totals, the cached and cache-write tokens part of the input, the reasoning part of the output.
 */
export function usageParts(usage: PricedUsage): { input: number; cached: number; cacheWrite: number; output: number; reasoning: number } {
  const input = tokens(usage.input);
  const cached = Math.min(tokens(usage.cached), input);
  const cacheWrite = Math.min(tokens(usage.cacheWrite), input - cached);
  const output = tokens(usage.output);
  return { input, cached, cacheWrite, output, reasoning: Math.min(tokens(usage.reasoning), output) };
}

/**
 * The cost of `usage` at `price`, rounded half up to COST_SCALE places. Counts that do not fit
 * their total (more cached than input tokens) are capped at it: a token is never charged twice.
 */
export function priceUsage(usage: PricedUsage, price: Price): { cost: Decimal } {
  const { input, cached, cacheWrite, output, reasoning } = usageParts(usage);
  const inputRate = toDecimal(price.inputPerMillion);
  const outputRate = toDecimal(price.outputPerMillion);
  const rateOr = (rate: DecimalInput | null | undefined, fallback: Decimal) => (rate == null ? fallback : toDecimal(rate));
  const perMillion = new Decimal(input - cached - cacheWrite)
    .times(inputRate)
    .plus(new Decimal(cached).times(rateOr(price.cachedInputPerMillion, inputRate)))
    .plus(new Decimal(cacheWrite).times(rateOr(price.cacheWritePerMillion, inputRate)))
    .plus(new Decimal(output - reasoning).times(outputRate))
    .plus(new Decimal(reasoning).times(rateOr(price.reasoningPerMillion, outputRate)));
  return { cost: perMillion.dividedBy(MILLION).toDecimalPlaces(COST_SCALE, DecimalJs.ROUND_HALF_UP) };
}
