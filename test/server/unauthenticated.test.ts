// Attack: without a key, probe the schema through validation errors ("Did you mean …" names
// fields). A request without a valid key is refused with 401 before its document is validated,
// over POST, GET and SSE alike; an authenticated caller still gets suggestions.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp;
let key = "";
beforeAll(async () => {
  t = await startTestApp("pglite", { listen: true, authRequired: true });
  key = await t.createPrincipal("Alice");
});
afterAll(() => t.close());

const MISSPELLED = "{ viewr { nme } }";

async function post(body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(t.server!.url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  return { status: response.status, text: await response.text() };
}

describe("a request without a valid key learns nothing about the schema", () => {
  it("gets 401 and no suggestion over POST, GET and SSE, with no key or a wrong one", async () => {
    const answers = [
      await post({ query: MISSPELLED }),
      await post({ query: MISSPELLED }, { authorization: "Bearer dsk_not-a-key" }),
      await post({ query: 'subscription { workspaceEvent(workspaceId: "x") { kind } }' }, { accept: "text/event-stream" }),
      await fetch(`${t.server!.url}?query=${encodeURIComponent(MISSPELLED)}`).then(async (response) => ({
        status: response.status,
        text: await response.text(),
      })),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(401);
      expect(answer.text).toContain("UNAUTHENTICATED");
      expect(answer.text).not.toMatch(/Did you mean|viewer|workspaceEvents/);
    }
  });

  it("still suggests field names to an authenticated caller", async () => {
    const answer = await post({ query: MISSPELLED }, { authorization: `Bearer ${key}` });
    expect(answer.text).toContain('Did you mean \\"viewer\\"?');
  });
});
