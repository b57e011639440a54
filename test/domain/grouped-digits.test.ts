// Numbers in descriptions and messages read as `toLocaleString("en")` writes them, without
// loading ICU's data (about 8 MB resident for the server's life).
import { describe, expect, it } from "vitest";
import { groupedDigits } from "../../src/domain/text/grouped-digits.js";

describe("groupedDigits", () => {
  it("writes what toLocaleString('en') writes for the integers Dossier shows", () => {
    for (const n of [0, 7, 999, 1_000, 10_000, 20_000, 100_000, 1_000_000, 1_234_567_890, -1_500, Number.MAX_SAFE_INTEGER]) {
      expect(groupedDigits(n)).toBe(n.toLocaleString("en"));
    }
  });

  it("keeps a fraction's digits as they are and leaves what has no digits to group", () => {
    expect(groupedDigits(1234.5)).toBe("1,234.5");
    expect(groupedDigits(-0.25)).toBe("-0.25");
    expect(groupedDigits(Number.NaN)).toBe("NaN");
    expect(groupedDigits(Number.POSITIVE_INFINITY)).toBe("Infinity");
    expect(groupedDigits(1e21)).toBe("1e+21");
  });
});
