// What the GraphQL server's responses tell caches and browsers: an authenticated answer and
// GraphiQL's page (which carries this process's secret header value) are never stored, a cache
// keeps each origin's answer apart (its CORS headers depend on the origin), and no browser sniffs
// a type other than the declared one. The icon, the same for everyone, is still kept a day.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GRAPHIQL_HEADER } from "../../src/server/trusted-documents.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const LISTED = "https://dashboard.example";
let t: TestApp;
let key: string;
beforeAll(async () => {
  t = await startTestApp("pglite", { authRequired: true, listen: true, corsOrigins: [LISTED] });
  key = await t.createPrincipal("Reader");
});
afterAll(async () => {
  await t.close();
});

const headersOf = (response: Response, ...names: string[]) => Object.fromEntries(names.map((name) => [name, response.headers.get(name)]));
const PRIVATE = { "cache-control": "no-store", vary: "Origin", "x-content-type-options": "nosniff" };

describe("response headers", () => {
  it("an authenticated GET /graphql: no-store, Vary: Origin and nosniff, with and without a listed origin", async () => {
    const url = `${t.server!.url}?query=${encodeURIComponent("{ viewer { name } }")}`;
    const plain = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    expect(await plain.json()).toEqual({ data: { viewer: { name: "Reader" } } });
    expect(headersOf(plain, "cache-control", "vary", "x-content-type-options", "access-control-allow-origin")).toEqual({
      ...PRIVATE,
      "access-control-allow-origin": null,
    });

    const fromPage = await fetch(url, { headers: { authorization: `Bearer ${key}`, origin: LISTED } });
    expect(await fromPage.json()).toEqual({ data: { viewer: { name: "Reader" } } });
    expect(headersOf(fromPage, "cache-control", "vary", "x-content-type-options", "access-control-allow-origin")).toEqual({
      ...PRIVATE,
      "access-control-allow-origin": LISTED,
    });
  });

  it("a refused request and an SSE stream are not stored either", async () => {
    const refused = await fetch(`${t.server!.url}?query=${encodeURIComponent("{ viewer { name } }")}`);
    expect(refused.status).toBe(401);
    expect(headersOf(refused, "cache-control", "vary", "x-content-type-options")).toEqual(PRIVATE);

    const stream = await fetch(t.server!.url, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, accept: "text/event-stream", "content-type": "application/json" },
      body: JSON.stringify({ query: "{ viewer { name } }" }),
    });
    expect(await stream.text()).toContain('"viewer":{"name":"Reader"}');
    expect(headersOf(stream, "cache-control", "vary", "x-content-type-options")).toEqual(PRIVATE);
  });

  it("GraphiQL's page, which carries the process's secret header value: no-store, Vary: Origin and nosniff", async () => {
    const page = await fetch(t.server!.url, { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(GRAPHIQL_HEADER);
    expect(headersOf(page, "content-type", "cache-control", "vary", "x-content-type-options", "x-frame-options")).toEqual({
      ...PRIVATE,
      "content-type": "text/html",
      "x-frame-options": "DENY",
    });
  });

  it("the icon, the same for everyone, is still kept a day", async () => {
    const icon = await fetch(new URL("/favicon.ico", t.server!.url));
    expect(headersOf(icon, "cache-control", "x-content-type-options")).toEqual({
      "cache-control": "public, max-age=86400",
      "x-content-type-options": "nosniff",
    });
  });
});
