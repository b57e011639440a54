// What any caller may send a server that runs trusted documents: texts that are no trusted
// document, as large as the body limit allows, cost it no memory once refused.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { trustedDocuments } from "../../src/server/trusted-documents.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** A distinct text of `bytes` one-byte characters, flat in memory (not a rope sharing a common part). */
const largeText = (i: number, bytes: number) => {
  const buffer = Buffer.alloc(bytes, "x");
  buffer.write(`query Q${i} { a } #`);
  return buffer.toString("latin1");
};

describe("the trusted-documents check", () => {
  it("keeps none of the large texts it refused: 200 distinct 1 MB texts retain under 20 MB", () => {
    const trusted = trustedDocuments({ only: true });
    expect(trusted.admits(largeText(-1, 1_000))).toBe(false);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 200; i += 1) expect(trusted.admits(largeText(i, 1_000_000))).toBe(false);
    gc();
    const retained = process.memoryUsage().heapUsed - before;
    // Keyed by the texts, the decisions held all 200 MB of them.
    expect(retained).toBeLessThan(20_000_000);
    // A text decided before is decided alike.
    expect(trusted.admits(largeText(7, 1_000_000))).toBe(false);
  });
});
