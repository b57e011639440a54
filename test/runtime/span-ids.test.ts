// Span ids keep the ORM's shape and sort in the order their spans started, within a process,
// however many are made (their random part is drawn from a pool refilled as it runs out).
import { describe, expect, it } from "vitest";
import { newSpanId } from "../../src/domain/trace/span-ids.js";

describe("newSpanId", () => {
  it("gives unique ids of the ORM's shape, in the order they were made, across refills of its random pool", () => {
    const ids = Array.from({ length: 2_000 }, () => newSpanId());
    for (const id of ids) expect(id).toMatch(/^c[0-9a-z]{8}[0-9a-z]{4}[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
    const randomParts = ids.map((id) => id.slice(13));
    expect(new Set(randomParts).size).toBe(ids.length);
    // Ids made in the same millisecond sort by their counter (until it wraps, every 1.68 million ids).
    const sorted = [...ids].sort();
    expect(sorted).toEqual(ids);
  });
});
