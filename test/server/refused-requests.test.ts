// A request refused by authentication or a rate limit is answered with that refusal, and nothing
// after it runs: with TRUSTED_DOCUMENTS_ONLY, a wrong key or a throttled key sending a large
// document gets its 401 or 429 — not TRUSTED_DOCUMENT_REQUIRED in its place — and the server
// never parses the document to compare it with the trusted ones; a keyless request naming an
// unknown documentId gets the 401 any keyless request gets, so a stranger cannot tell which ids
// the operator trusts. A text an admitted key sends is compared no further than the tokens the
// largest trusted document needs. Parses are counted through graphql's `parse` (mocked here,
// which is why this file runs in a process of its own).
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/config.js";
import { DEFAULT_QUERY_LIMITS } from "../../src/server/hardening.js";
import { InProcessTokenBuckets, type TokenBuckets } from "../../src/server/rate-limit.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** Every parse of our sources (Yoga's own go to the real one): its text and its token limit. */
const parses = vi.hoisted(() => [] as { text: string; maxTokens?: number }[]);
vi.mock("graphql", async (importOriginal) => {
  const graphql = await importOriginal<typeof import("graphql")>();
  return {
    ...graphql,
    parse: (...args: Parameters<typeof graphql.parse>) => {
      const [source, options] = args;
      parses.push({ text: typeof source === "string" ? source : source.body, maxTokens: options?.maxTokens });
      return graphql.parse(...args);
    },
  };
});

/** One request a minute for each key; requests without a valid key (their address's bucket) are not limited here. */
const perKey = (buckets: TokenBuckets): TokenBuckets => ({
  take: async (key) => (key.startsWith("address:") ? { allowed: true } : buckets.take(key)),
  peek: (key) => buckets.peek(key),
});

/** An untrusted document of about 50,000 tokens, as graphql's printer writes it (so only its size tells it from a trusted one). */
const large = (name: string) => `query ${name} {\n${Array.from({ length: 25_000 }, (_, i) => `  f${i}`).join("\n")}\n}`;

describe("refused requests, with TRUSTED_DOCUMENTS_ONLY and keys required", () => {
  let t: TestApp;
  let throttled: string;
  let admitted: string;
  beforeAll(async () => {
    t = await startTestApp("pglite", {
      authRequired: true,
      trustedDocuments: loadConfig({ TRUSTED_DOCUMENTS_ONLY: "true" }).trustedDocuments,
      rateLimits: perKey(new InProcessTokenBuckets({ perMinute: 1, burst: 1 })),
    });
    throttled = await t.createPrincipal("throttled");
    admitted = await t.createPrincipal("admitted");
  });
  afterAll(async () => t?.close());

  const send = async (body: unknown, key?: string) => {
    const response = await t.app.yoga.fetch(
      new Request("http://dossier.test/graphql", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(body),
      }),
    );
    const json = (await response.json()) as { errors?: { extensions?: { code?: string } }[] };
    return { status: response.status, codes: json.errors?.map((error) => error.extensions?.code) };
  };
  const parsesOf = (text: string) => parses.filter((parse) => parse.text === text);

  it("answers a wrong key 401 UNAUTHENTICATED, and never parses its document", async () => {
    const query = large("WrongKey");
    for (let i = 0; i < 3; i++) expect(await send({ query }, "dsk_wrong_key_wrong_key")).toEqual({ status: 401, codes: ["UNAUTHENTICATED"] });
    expect(parsesOf(query)).toEqual([]);
  });

  it("answers a key over its rate limit 429 RATE_LIMITED, and never parses its document", async () => {
    // The bucket holds one token: the first request takes it.
    expect((await send({ query: "{ viewer { name } }" }, throttled)).codes).toEqual(["TRUSTED_DOCUMENT_REQUIRED"]);
    const query = large("Throttled");
    for (let i = 0; i < 3; i++) expect(await send({ query }, throttled)).toEqual({ status: 429, codes: ["RATE_LIMITED"] });
    expect(parsesOf(query)).toEqual([]);
  });

  it("answers a keyless request 401 whether or not its documentId is a trusted one", async () => {
    expect(await send({ documentId: "x-myapp:NoSuchDocument" })).toEqual({ status: 401, codes: ["UNAUTHENTICATED"] });
    expect(await send({ documentId: "sha256:0000000000000000000000000000000000000000000000000000000000000000" })).toEqual({
      status: 401,
      codes: ["UNAUTHENTICATED"],
    });
  });

  it("compares an admitted key's untrusted text no further than the largest trusted document needs", async () => {
    const query = large("Admitted");
    expect(await send({ query }, admitted)).toEqual({ status: 400, codes: ["TRUSTED_DOCUMENT_REQUIRED"] });
    const compared = parsesOf(query);
    expect(compared).toHaveLength(1);
    // No more than any document that runs may hold: a text the comparison would need more for is refused when it runs anyway.
    expect(compared[0]!.maxTokens).toBeGreaterThan(0);
    expect(compared[0]!.maxTokens).toBeLessThanOrEqual(DEFAULT_QUERY_LIMITS.maxTokens);
  });
});
