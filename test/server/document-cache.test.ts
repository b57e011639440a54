// Parsed documents are kept by their text (server/document-cache.ts) so that a repeated document is
// parsed once, but what is kept is bounded by the memory it takes, and only documents the server
// runs are kept: one principal sending many distinct large documents, invalid ones, or ones over
// the token limit, cannot make the server hold gigabytes, nor push every other principal's
// documents out. Parses are counted through graphql's `parse`, the function the query limits
// (server/hardening.ts) parse every document with, and compiles through graphql-jit's `compileQuery`.
import { readFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parse } from "graphql";
import { DOCUMENT_CACHE_MAX_BYTES, documentBytes } from "../../src/server/document-cache.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const parses = vi.hoisted(() => ({ count: 0 }));
vi.mock("graphql", async (importOriginal) => {
  const graphql = await importOriginal<typeof import("graphql")>();
  return {
    ...graphql,
    parse: (...args: Parameters<typeof graphql.parse>) => {
      parses.count += 1;
      return graphql.parse(...args);
    },
  };
});

const compiles = vi.hoisted(() => ({ count: 0 }));
vi.mock("graphql-jit", async (importOriginal) => {
  const jit = await importOriginal<typeof import("graphql-jit")>();
  return {
    ...jit,
    compileQuery: (...args: Parameters<typeof jit.compileQuery>) => {
      compiles.count += 1;
      return jit.compileQuery(...args);
    },
  };
});

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

describe("the parsed-document cache", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp("pglite");
  });
  afterAll(() => t.close());

  const send = async (query: string, app = t, key?: string) => {
    const headers = { "content-type": "application/json", ...(key && { authorization: `Bearer ${key}` }) };
    const response = await app.app.yoga.fetch(new Request("http://dossier.test/graphql", { method: "POST", headers, body: JSON.stringify({ query }) }));
    return (await response.json()) as { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
  };

  it("parses a document sent 100 times once, and a refused one each time, with the same answer", async () => {
    const query = "query Repeated { workspaces(first: 2) { edges { node { id title } } } }";
    const before = parses.count;
    for (let i = 0; i < 100; i += 1) expect((await send(query)).errors).toBeUndefined();
    expect(parses.count - before).toBe(1);

    const refused = ["query Invalid { noSuchField }", "query Broken { workspaces(", `query Long { ${"__typename ".repeat(5_000)} }`];
    for (const text of refused) {
      const first = await send(text);
      const start = parses.count;
      expect(await send(text)).toEqual(first);
      expect(await send(text)).toEqual(first);
      expect(parses.count - start).toBe(2);
    }
    expect((await send(refused[2]!)).errors?.[0]?.extensions?.code).toBe("TOO_MANY_TOKENS");
  });

  it("holds one principal to a quarter of the cache: 1,000 distinct texts of one leave another's documents kept", async () => {
    const fresh = await startTestApp("pglite");
    const [churner, other] = [await fresh.createPrincipal("churner"), await fresh.createPrincipal("other")];
    const others = Array.from({ length: 5 }, (_, i) => `query Kept${i} { workspaces(first: 1) { edges { node { id } } } }`);
    for (const query of others) expect((await send(query, fresh, other)).errors).toBeUndefined();
    for (let i = 0; i < 1_000; i += 1) expect((await send(`query Churn${i} { __typename }`, fresh, churner)).errors).toBeUndefined();
    const start = parses.count;
    for (const query of others) expect((await send(query, fresh, other)).errors).toBeUndefined();
    expect(parses.count - start).toBe(0);
    // The churner's own least recently used went instead: its first text is parsed again.
    await send("query Churn0 { __typename }", fresh, churner);
    expect(parses.count - start).toBe(1);
    await fresh.close();
  }, 120_000);

  it("keeps a document another principal still uses: one that sent the same texts and then churns takes them out of its own share only", async () => {
    const fresh = await startTestApp("pglite");
    const [churner, other] = [await fresh.createPrincipal("churner"), await fresh.createPrincipal("other")];
    const others = Array.from({ length: 5 }, (_, i) => `query Kept${i} { workspaces(first: 1) { edges { node { id } } } }`);
    for (const query of others) expect((await send(query, fresh, other)).errors).toBeUndefined();
    // The same texts (the SDK's are everyone's) from the churner: each is in its share now, and still in the other's.
    let start = parses.count;
    for (const query of others) expect((await send(query, fresh, churner)).errors).toBeUndefined();
    expect(parses.count - start).toBe(0);
    for (let i = 0; i < 300; i += 1) expect((await send(`query Churn${i} { __typename }`, fresh, churner)).errors).toBeUndefined();
    start = parses.count;
    for (const query of others) expect((await send(query, fresh, other)).errors).toBeUndefined();
    expect(parses.count - start).toBe(0);
    // The shared texts counted, whole, against the churner's quarter: it kept its newest 250 texts, no more.
    start = parses.count;
    await send("query Churn50 { __typename }", fresh, churner);
    expect(parses.count - start).toBe(0);
    await send("query Churn49 { __typename }", fresh, churner);
    expect(parses.count - start).toBe(1);
    // Once every principal that used a text let it go, it is gone: the churner sends one again and churns past it.
    await send(others[0]!, fresh, churner);
    for (let i = 0; i < 250; i += 1) await send(`query Again${i} { __typename }`, fresh, churner);
    for (let i = 0; i < 250; i += 1) await send(`query Other${i} { __typename }`, fresh, other);
    start = parses.count;
    await send(others[0]!, fresh, other);
    expect(parses.count - start).toBe(1);
    await fresh.close();
  }, 120_000);

  it("holds at most its byte budget, however many large distinct documents are sent", async () => {
    const comment = `# ${"x".repeat(900_000)}\n`;
    // Each kind made the old cache, unbounded in bytes, keep hundreds of megabytes for a few
    // megabytes of traffic. The texts are made one at a time, so that the test keeps none.
    const traffic: [number, (i: number) => string][] = [
      // ~10 KB, 4,990 tokens, refused by validation (no field `a`): ~2.4 MB parsed.
      [150, (i) => `query Invalid${i} { ${"a ".repeat(4_990)} }`],
      // ~800 KB: 400,000 comments, refused (no more comments than MAX_QUERY_TOKENS): ~36 MB parsed were kept.
      [20, (i) => `query Comments${i} { __typename ${"#\n".repeat(400_000)}}`],
      // ~10 KB, valid: 4,900 comments.
      [150, (i) => `query FewComments${i} { __typename ${"#\n".repeat(4_900)}}`],
      // ~900 KB, valid: one long comment.
      [40, (i) => `${comment}query Commented${i} { __typename }`],
      // ~900 KB, over the token limit.
      [40, (i) => `query Over${i} { ${"a ".repeat(6_000)} } ${comment}`],
    ];
    await send("{ __typename }");
    gc();
    const before = process.memoryUsage().heapUsed;
    const answers = new Set<string>();
    for (const [count, text] of traffic) {
      for (let i = 0; i < count; i += 1) {
        const answer = await send(text(i));
        answers.add(answer.errors ? (answer.errors[0]?.extensions?.code ?? "") : "data");
      }
    }
    expect([...answers].sort()).toEqual(["GRAPHQL_VALIDATION_FAILED", "TOO_MANY_TOKENS", "data"]);
    gc();
    const retained = process.memoryUsage().heapUsed - before;
    // The budget is an estimate above the truth: what is kept weighs less than it.
    expect(retained).toBeLessThan(DOCUMENT_CACHE_MAX_BYTES + 16 * 1024 * 1024);

    // A normal document still hits the cache after all of that.
    const query = "query AfterFlood { __typename }";
    const start = parses.count;
    for (let i = 0; i < 10; i += 1) await send(query);
    expect(parses.count - start).toBe(1);
  }, 120_000);

  it("counts what a document's compiled plan keeps alive: many distinct valid operations stay within the budget", async () => {
    // The SDK's run list: its plan (generated code) weighs several times its parsed document. Counted
    // by document alone, ~500 of these would fit the budget and retain half again as much.
    const manifest = JSON.parse(readFileSync("sdk/generated/persisted-documents.json", "utf8")) as Record<string, string>;
    const runs = Object.values(manifest).find((text) => text.startsWith("query Runs("))!;
    // An app of its own: its cache starts empty. Four principals fill it (each holds a quarter).
    const fresh = await startTestApp("pglite");
    const keys = [await fresh.createPrincipal("p0"), await fresh.createPrincipal("p1"), await fresh.createPrincipal("p2"), await fresh.createPrincipal("p3")];
    await send("{ __typename }", fresh);
    gc();
    const before = process.memoryUsage().heapUsed;
    const compiled = compiles.count;
    for (let i = 0; i < 1_000; i += 1) {
      const text = runs.replace("query Runs(", `query Runs${i}(`);
      expect((await send(text, fresh, keys[i % 4])).errors).toBeUndefined();
    }
    expect(compiles.count - compiled).toBe(1_000);
    gc();
    const retained = process.memoryUsage().heapUsed - before;
    await fresh.close();
    // The estimate is above the truth: what is kept weighs less than the budget (about 16 MB here;
    // about 100 MB when plans went uncounted and documents were bounded by count alone).
    expect(retained).toBeLessThan(DOCUMENT_CACHE_MAX_BYTES);
  }, 300_000);

  it("weighs a parsed document at no less than the memory it takes, whatever its shape", () => {
    const shapes: ((i: number) => string)[] = [
      (i) => `query Names${i} { ${"a ".repeat(4_990)} }`,
      (i) => `query Arguments${i} { ${'a(x: 1, y: "s") '.repeat(600)} }`,
      (i) => `query Variables${i}(${Array.from({ length: 1_200 }, (_, j) => `$v${j}: Int`).join(" ")}) { a }`,
      (i) => `query Objects${i} { a(x: {${"k: 1 ".repeat(1_600)}}) }`,
      (i) => `query Comments${i} { a ${"#\n".repeat(20_000)}}`,
      (i) => `query Strings${i} { a(x: "${"\u00e9".repeat(20_000)}", y: """${"z".repeat(20_000)}""") }`,
    ];
    // Every document stays reachable to the end, so that no shape's measure sees another's freed.
    const kept: unknown[] = [];
    for (const shape of shapes) {
      const texts = Array.from({ length: 20 }, (_, i) => shape(i));
      for (const text of texts) text.charCodeAt(0); // flattened now, not while parsing
      gc();
      const before = process.memoryUsage().heapUsed;
      const documents = texts.map((text) => parse(text));
      gc();
      const taken = process.memoryUsage().heapUsed - before;
      kept.push(texts, documents);
      const estimate = documents.reduce((sum, document, i) => sum + documentBytes(texts[i]!, document), 0);
      expect(taken, texts[0]!.slice(0, 20)).toBeGreaterThan(0);
      expect(taken, texts[0]!.slice(0, 20)).toBeLessThan(estimate);
    }
  });
});
