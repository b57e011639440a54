// Pricing a model call's usage (issue 40): hand-computed expectations. Cached tokens are part of
// the input and reasoning tokens part of the output; charging them on top (the double-charge
// trap) would overstate the cost. All arithmetic is decimal: 0.1 + 0.2 is 0.3.
import { describe, expect, it } from "vitest";
import { priceUsage } from "../../src/domain/costs/pricing.js";

const cost = (...args: Parameters<typeof priceUsage>) => priceUsage(...args).cost.toFixed();

describe("priceUsage", () => {
  const price = { inputPerMillion: "2.50", cachedInputPerMillion: "1.25", outputPerMillion: "10.00" };
  const usage = { input: 12_000, cached: 10_000, output: 3_000, reasoning: 2_000 };

  it("charges cached tokens as part of the input and reasoning tokens as part of the output", () => {
    // 2,000 uncached × 2.50 + 10,000 cached × 1.25 + 3,000 output × 10.00 (reasoning at the output
    // price) = 5,000 + 12,500 + 30,000 = 47,500 per million tokens.
    expect(cost(usage, price)).toBe("0.0475");
    // Charged on top, the same call would come to 12,000 × 2.50 + 10,000 × 1.25 + 3,000 × 10 + 2,000 × 10 = 92,500.
    expect(cost(usage, price)).not.toBe("0.0925");
  });

  it("prices reasoning tokens at their own rate when there is one", () => {
    // 17,500 for the input as above; 1,000 visible output × 10 + 2,000 reasoning × 15 = 40,000.
    expect(cost(usage, { ...price, reasoningPerMillion: "15" })).toBe("0.0575");
  });

  it("prices cached input at the input price when the entry has no cached price", () => {
    // 12,000 × 2.50 + 3,000 × 10 = 60,000.
    expect(cost(usage, { inputPerMillion: "2.50", outputPerMillion: "10" })).toBe("0.06");
    expect(cost(usage, { inputPerMillion: "2.50", cachedInputPerMillion: null, outputPerMillion: "10", reasoningPerMillion: null })).toBe("0.06");
  });

  it("charges cache writes as part of the input, at their own price", () => {
    // 2,000 × 2.50 + 4,000 cached × 1.25 + 6,000 written × 3.125 = 5,000 + 5,000 + 18,750 = 28,750.
    const written = { input: 12_000, cached: 4_000, cacheWrite: 6_000, output: 0, reasoning: 0 };
    expect(cost(written, { ...price, cacheWritePerMillion: "3.125" })).toBe("0.02875");
    // Without a cache-write price the written tokens are input: 2,000 × 2.5 + 4,000 × 1.25 + 6,000 × 2.5 = 25,000.
    expect(cost(written, price)).toBe("0.025");
  });

  it("is decimal, not floating point", () => {
    // 1,000,000 × 0.1 + 1,000,000 × 0.2: 0.30000000000000004 in floating point.
    expect(cost({ input: 1_000_000, cached: 0, output: 1_000_000, reasoning: 0 }, { inputPerMillion: "0.1", outputPerMillion: "0.2" })).toBe("0.3");
    // 1 token at 0.15 per million costs exactly 0.00000015.
    expect(cost({ input: 1, cached: 0, output: 0, reasoning: 0 }, { inputPerMillion: "0.15", outputPerMillion: "0.6" })).toBe("0.00000015");
    // A large count at a price with every decimal place: 987,654,321 × 1234.5678901234 / 10^6, = 1,219,326.31124822923…, kept to 10 places.
    expect(cost({ input: 987_654_321, cached: 0, output: 0, reasoning: 0 }, { inputPerMillion: "1234.5678901234", outputPerMillion: "0" })).toBe(
      "1219326.3112482292",
    );
  });

  it("keeps ten decimal places, rounded half up", () => {
    // 1 token at 0.00005 per million is 0.00000000005: half of the last place, rounded up.
    expect(cost({ input: 1, cached: 0, output: 0, reasoning: 0 }, { inputPerMillion: "0.00005", outputPerMillion: "0" })).toBe("0.0000000001");
    expect(cost({ input: 1, cached: 0, output: 0, reasoning: 0 }, { inputPerMillion: "0.00004", outputPerMillion: "0" })).toBe("0");
  });

  it("never charges a token twice when the counts do not fit their totals", () => {
    // More cached than input tokens: all 100 are cached. More reasoning than output: all 50 are reasoning.
    expect(cost({ input: 100, cached: 150, output: 50, reasoning: 80 }, { ...price, reasoningPerMillion: "20" })).toBe("0.001125");
  });
});
