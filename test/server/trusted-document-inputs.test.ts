// What any caller may send a server's trusted-documents check: texts that are no trusted document,
// as large as the body limit allows, cost it no memory once refused; a `query` that is no text is
// refused as such, not as an untrusted document.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { trustedDocuments } from "../../src/server/trusted-documents.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

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

describe.each([false, true])("a server with TRUSTED_DOCUMENTS_ONLY=%s", (only) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("pglite", { listen: true, trustedDocuments: { only, extra: {} } });
  }, 60_000);
  afterAll(async () => t?.close());

  it.each([
    ["an object", { kind: "Document" }],
    ["a number", 1],
    ["a list", ["{ __typename }"]],
    ["true", true],
  ])("refuses %s as `query` with 400 saying it must be a string, counting no refused trusted document", async (_name, query) => {
    const counted = await rejected(t.server!.url, "TRUSTED_DOCUMENT_REQUIRED");
    const response = await fetch(t.server!.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
      body: JSON.stringify({ query }),
    });
    const body = (await response.json()) as { errors: { message: string; extensions: { code: string } }[] };
    expect([response.status, body.errors]).toEqual([
      400,
      [{ message: "`query` must be a string: the text of a GraphQL document.", extensions: { code: "BAD_REQUEST" } }],
    ]);
    expect(await rejected(t.server!.url, "TRUSTED_DOCUMENT_REQUIRED")).toBe(counted);
  });
});

/** How many requests /metrics counts as refused for `reason`. */
async function rejected(url: string, reason: string): Promise<number> {
  const metrics = await (await fetch(new URL("/metrics", url))).text();
  const line = metrics.split("\n").find((l) => l.startsWith(`dossier_graphql_rejected_total{reason="${reason}"} `));
  return Number(line?.split(" ")[1] ?? 0);
}
