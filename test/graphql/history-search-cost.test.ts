// One principal's search over long versions costs a bounded time and does not hold the instance
// for everyone: the words are matched in what was stored when each version was written, and a
// snippet is highlighted in a window around the first match rather than in the whole body. On
// the embedded database, which runs inside the server's process, another principal's request
// made during the search is answered without waiting for it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SearchHistoryDocument, ViewerDocument } from "../../sdk/generated/graphql.js";
import { SEARCH_INDEXED_CHARS, SNIPPET_MAX_CHARS, SNIPPET_WINDOW_CHARS } from "../../src/domain/workspace/history-search.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { seedLinkedPublications } from "../support/history-seed.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const WORDS = "the battery makers reported lithium manganese prices rising sharply while smelters in Indonesia expanded output and refiners hedged".split(" ");

/** About 99,000 characters of varied words, with "cobalt" and "nickel" every few hundred words. */
function longBody(seed: number): string {
  const words: string[] = [];
  let length = 0;
  for (let i = seed; length < 99_000; i += 1) {
    const word = i % 97 === 0 ? "cobalt" : i % 89 === 0 ? "nickel" : WORDS[(i * 7 + (i >> 3)) % WORDS.length]!;
    words.push(word);
    length += word.length + 1;
  }
  return words.join(" ");
}

const VERSIONS = 30;

describe.each(backends)("searching long versions on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];
  beforeAll(async () => {
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
  });
  afterAll(async () => t?.close());

  it("answers within a bounded time, with snippets around the matches, while another principal is served", async () => {
    const workspace = await createWorkspace(t.client);
    await seedLinkedPublications(t.app.db.prisma, workspace.id, { count: VERSIONS, title: (i) => `Metals ${i}`, content: (i) => longBody(i) });
    const alice = t.as(await t.createPrincipal("alice"));
    await alice.request(ViewerDocument, {});

    statements.length = 0;
    const started = performance.now();
    let aliceServedAt = 0;
    const [result] = await Promise.all([
      t.client.request(SearchHistoryDocument, { workspaceId: workspace.id, query: "cobalt nickel", first: 50 }),
      (async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        await alice.request(ViewerDocument, {});
        aliceServedAt = performance.now() - started;
      })(),
    ]);
    const searchMs = performance.now() - started;
    const found = expectType(result.searchHistory, "SearchHistorySuccess");
    expect(found.hits).toHaveLength(VERSIONS);
    expect(found.complete).toBe(true);
    for (const hit of found.hits) {
      expect(hit.snippet).toMatch(/«cobalt»|«nickel»/);
      expect(hit.snippet.length).toBeLessThanOrEqual(SNIPPET_MAX_CHARS);
    }
    // Parsing and highlighting each whole body took over 3 s here on the embedded database, and
    // Alice waited for it; on PostgreSQL it held a pooled connection as long.
    expect(searchMs).toBeLessThan(2_000);
    expect(aliceServedAt).toBeLessThan(2_000);
    // The statement parses no body: it matches the words stored with each version and highlights
    // a window of SNIPPET_WINDOW_CHARS, never the SEARCH_INDEXED_CHARS the words were taken from.
    const searched = statements.find((sql) => sql.includes("ts_headline"))!;
    expect(searched).toContain("v.content_words @@ websearch_to_tsquery");
    expect(searched).not.toMatch(/to_tsvector\([^)]*content/);
    expect(searched).toContain(`left(v.content, ${SNIPPET_WINDOW_CHARS})`);
    expect(searched).not.toMatch(new RegExp(`ts_headline\\([^,]*, left\\(v\\.content, ${SEARCH_INDEXED_CHARS}\\)`));
  });

  it("highlights a match deep in a long body, and a word whose stem is not how it is written", async () => {
    const workspace = await createWorkspace(t.client);
    const filler = "Unrelated paragraph about supply chains and logistics. ".repeat(1_600);
    await seedLinkedPublications(t.app.db.prisma, workspace.id, {
      count: 2,
      title: (i) => ["Deep note", "Mood note"][i]!,
      content: (i) => [`${filler}The gallium refinery finally opened. ${filler}`, `${filler.slice(0, 5_000)} Analysts were happy about ponies. `][i]!,
    });
    expect(filler.length).toBeGreaterThan(85_000);
    const deep = expectType(
      (await t.client.request(SearchHistoryDocument, { workspaceId: workspace.id, query: "gallium refineries" })).searchHistory,
      "SearchHistorySuccess",
    );
    expect(deep.hits.map((hit) => hit.title)).toEqual(["Deep note"]);
    expect(deep.hits[0]!.snippet).toContain("«gallium» «refinery»");
    const mood = expectType(
      (await t.client.request(SearchHistoryDocument, { workspaceId: workspace.id, query: "happiness pony" })).searchHistory,
      "SearchHistorySuccess",
    );
    expect(mood.hits.map((hit) => hit.title)).toEqual(["Mood note"]);
    expect(mood.hits[0]!.snippet).toContain("«happy» about «ponies»");
  });
});
