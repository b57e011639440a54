// W6: the history catalog pages to its end with a cursor, every entry exactly once, and says
// what each page left out; searchHistory finds what the catalog would list by words of a title
// or a body, answers with snippets rather than bodies, and leaves out what may not be relied on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HistoryCatalogDocument,
  type HistoryCatalogQuery,
  LinkToWorkspaceDocument,
  RevokePublicationVersionDocument,
  SearchHistoryDocument,
} from "../../sdk/generated/graphql.js";
import { SNIPPET_MAX_CHARS } from "../../src/domain/workspace/history-search.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace, expectType, publish } from "../support/fixtures.js";
import { seedLinkedPublications } from "../support/history-seed.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Catalog = Extract<NonNullable<HistoryCatalogQuery["node"]>, { __typename: "Workspace" }>["historyCatalog"];

describe.each(backends)("paging and searching the history on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];
  beforeAll(async () => {
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
  });
  afterAll(async () => t?.close());

  const catalogOf = async (workspaceId: string, variables: { first?: number; after?: string | null } = {}): Promise<Catalog> =>
    expectType((await t.client.request(HistoryCatalogDocument, { workspaceId, ...variables })).node!, "Workspace").historyCatalog;
  const search = async (workspaceId: string, query: string, first?: number, client = t.client) =>
    (await client.request(SearchHistoryDocument, { workspaceId, query, first })).searchHistory;

  it("pages a catalog of more than 50 entries to its end, each exactly once and in order, whatever the page size", async () => {
    const workspace = await createWorkspace(t.client);
    const seeded = await seedLinkedPublications(t.app.db.prisma, workspace.id, { count: 57 });

    const first = await catalogOf(workspace.id);
    expect(first.entries).toHaveLength(50);
    expect(first).toMatchObject({ complete: false, truncatedReason: "MORE_ENTRIES", pageInfo: { hasNextPage: true } });
    const rest = await catalogOf(workspace.id, { after: first.pageInfo.endCursor });
    expect(rest).toMatchObject({ complete: true, truncatedReason: null, pageInfo: { hasNextPage: false } });
    expect([...first.entries, ...rest.entries].map((e) => e.publicationId)).toEqual(seeded.map((p) => p.globalId));

    // Small pages cut through groups of entries created in the same instant: no gap, no repeat.
    const walked: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 30; page += 1) {
      const catalog: Catalog = await catalogOf(workspace.id, { first: 4, after });
      walked.push(...catalog.entries.map((e) => e.publicationId));
      if (!catalog.pageInfo.hasNextPage) break;
      expect(catalog.truncatedReason).toBe("MORE_ENTRIES");
      after = catalog.pageInfo.endCursor!;
    }
    expect(walked).toEqual(seeded.map((p) => p.globalId));

    const bogus = await t.client.request(HistoryCatalogDocument, { workspaceId: workspace.id, after: "bm90IGEgY3Vyc29y" }).catch((e: Error) => e);
    expect(String(bogus)).toContain("after: is not a cursor of the history catalog");
  });

  it("is incomplete when an entry's versions were cut, and says so apart from entries left out", async () => {
    const workspace = await createWorkspace(t.client);
    const [long] = await seedLinkedPublications(t.app.db.prisma, workspace.id, { count: 1, versions: 23, start: new Date("2026-05-01T00:00:00Z") });
    const short = await publish(t.client, { title: "Short", content: "one version" });
    await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: short.version.publication.id } });

    const whole = await catalogOf(workspace.id);
    expect(whole.entries).toHaveLength(2);
    expect(whole).toMatchObject({ complete: false, truncatedReason: "VERSIONS_CUT", pageInfo: { hasNextPage: false } });
    const cut = whole.entries.find((e) => e.publicationId === long!.globalId)!;
    expect(cut).toMatchObject({ latestVersion: 23, versionsComplete: false });
    expect(cut.versions.map((v) => v.version)).toEqual(Array.from({ length: 20 }, (_, i) => 23 - i));

    // The short publication is the newest: its page is whole, but the long one follows it.
    const firstPage = await catalogOf(workspace.id, { first: 1 });
    expect(firstPage).toMatchObject({ complete: false, truncatedReason: "MORE_ENTRIES" });
    const secondPage = await catalogOf(workspace.id, { first: 1, after: firstPage.pageInfo.endCursor });
    expect(secondPage).toMatchObject({ complete: false, truncatedReason: "VERSIONS_CUT" });

    // Both at once: a page that cut versions and has entries after it.
    const older = await createWorkspace(t.client, "Both");
    await seedLinkedPublications(t.app.db.prisma, older.id, { count: 2, versions: 21 });
    expect(await catalogOf(older.id, { first: 1 })).toMatchObject({ complete: false, truncatedReason: "MORE_ENTRIES_AND_VERSIONS_CUT" });
  });

  it("finds eligible materials by title and by words of their content, with a snippet and never the body", async () => {
    const workspace = await createWorkspace(t.client);
    const filler = "Unrelated paragraph about supply chains and logistics. ".repeat(400);
    const body = `${filler}The separator membranes were the bottleneck in every gigafactory we visited. ${filler}`;
    const membranes = await publish(t.client, { title: "Factory visits", content: body });
    const tariffs = await publish(t.client, { title: "Tariff outlook for cathodes", content: "Short note on duties." });
    const revoked = await publish(t.client, { title: "Retracted membranes memo", content: "Membranes are fine." });
    const unlinked = await publish(t.client, { title: "Private membranes draft", content: "Membranes, not linked." });
    for (const p of [membranes, tariffs, revoked]) {
      await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: p.version.publication.id } });
    }
    await t.client.request(RevokePublicationVersionDocument, {
      input: { publicationId: revoked.version.publication.id, version: 1, reason: "wrong plant" },
    });
    // Another principal's publication with the same words, in a workspace of theirs.
    const other = t.as(await t.createPrincipal("rival"));
    const theirs = await publish(other, { title: "Membranes", content: "membrane bottleneck" });

    const byBody = expectType(await search(workspace.id, "membrane bottleneck"), "SearchHistorySuccess");
    expect(byBody.complete).toBe(true);
    expect(byBody.hits.map((h) => [h.publicationId, h.version, h.matchedTitle])).toEqual([[membranes.version.publication.id, 1, false]]);
    const [hit] = byBody.hits;
    expect(hit).toMatchObject({ versionId: membranes.version.id, title: "Factory visits", asOf: membranes.version.asOf });
    expect(hit!.snippet).toContain("«membranes»");
    expect(hit!.snippet).toContain("«bottleneck»");
    expect(hit!.snippet.length).toBeLessThanOrEqual(SNIPPET_MAX_CHARS);
    expect(body.length).toBeGreaterThan(40_000);

    const byTitle = expectType(await search(workspace.id, "tariffs"), "SearchHistorySuccess");
    expect(byTitle.hits.map((h) => [h.title, h.matchedTitle])).toEqual([["Tariff outlook for cathodes", true]]);
    expect(byTitle.hits[0]!.snippet).toBe("Short note on duties.");

    // Neither the revoked version, the unlinked draft nor the other principal's publication.
    const all = expectType(await search(workspace.id, "membranes"), "SearchHistorySuccess");
    const found = all.hits.map((h) => h.publicationId);
    expect(found).toEqual([membranes.version.publication.id]);
    expect(found).not.toContain(revoked.version.publication.id);
    expect(found).not.toContain(unlinked.version.publication.id);
    expect(found).not.toContain(theirs.version.publication.id);
    // And nobody searches a workspace that is not theirs.
    expect((await search(workspace.id, "membranes", undefined, other)).__typename).toBe("NotFoundError");
  });

  it("says when more versions match than were asked for, and refuses queries it cannot run", async () => {
    const workspace = await createWorkspace(t.client);
    await seedLinkedPublications(t.app.db.prisma, workspace.id, { count: 5, versions: 2, content: (i, v) => `Cobalt price note ${i}.${v}` });
    const three = expectType(await search(workspace.id, "cobalt", 3), "SearchHistorySuccess");
    expect(three.hits).toHaveLength(3);
    expect(three.complete).toBe(false);
    const all = expectType(await search(workspace.id, "cobalt", 50), "SearchHistorySuccess");
    expect(all.hits).toHaveLength(10);
    expect(all.complete).toBe(true);

    const issues = async (query: string, first?: number) => expectType(await search(workspace.id, query, first), "ValidationError").issues;
    expect(await issues("   ")).toEqual([{ field: "query", message: "must not be empty" }]);
    expect(await issues("x".repeat(201))).toEqual([{ field: "query", message: "must be at most 200 characters" }]);
    expect(await issues("the of and")).toEqual([{ field: "query", message: "has no words to search for (only stop words or punctuation)" }]);
    expect(await issues("cobalt", 51)).toEqual([{ field: "first", message: "must be at most 50" }]);
    expect(await issues("cobalt\u0000price")).toEqual([{ field: "query", message: "contains a NUL character (U+0000)" }]);
    expect((await search(encodeGlobalId("Workspace", "no-such-workspace"), "cobalt")).__typename).toBe("NotFoundError");
  });

  it("finds matches through the GIN indexes on titles and content", async () => {
    // The search's expressions, as the migrations index them; with sequential scans off the
    // planner must take the indexes, which it can only if the expressions are the same.
    const plan = await t.app.db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe("SET LOCAL enable_seqscan = off");
      // Nor a walk of a whole primary key, which on tables this small costs about as little.
      await tx.$executeRawUnsafe("SET LOCAL enable_indexscan = off");
      return tx.$queryRawUnsafe<Record<string, string>[]>(
        `EXPLAIN SELECT v.id FROM publication_version v
            WHERE ARRAY[v.owner_id] @> ARRAY['someone'::text]
              AND v.content_words @@ websearch_to_tsquery('english'::regconfig, 'membranes')
           UNION
           SELECT v.id FROM publication p JOIN publication_version v ON v.publication_id = p.id
            WHERE to_tsvector('english'::regconfig, p.title) @@ websearch_to_tsquery('english'::regconfig, 'membranes')`,
      );
    });
    const text = plan.map((row) => Object.values(row)[0]).join("\n");
    expect(text).toContain("publication_version_owner_content_words_idx");
    expect(text).toContain("publication_title_search_idx");
    // And the search runs those very expressions.
    statements.length = 0;
    const workspace = await createWorkspace(t.client);
    expectType(await search(workspace.id, "membranes"), "SearchHistorySuccess");
    const searched = statements.find((sql) => sql.includes("websearch_to_tsquery"))!;
    expect(searched).toMatch(/WHERE ARRAY\[v\.owner_id\] @> ARRAY\[\$\d+::text\] AND v\.content_words @@ websearch_to_tsquery\('english'::regconfig, \$\d+\)/);
    expect(searched).toMatch(/to_tsvector\('english'::regconfig, p\.title\) @@ websearch_to_tsquery\('english'::regconfig, \$\d+\)/);
  });
});
