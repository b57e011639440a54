// A page of the history catalog costs what the page lists, not what the listed versions hold:
// listing versions with nearly a megabyte of content each reads none of that content (whether a body
// still matches its hash is kept by the database when the body is written), and a body edited
// behind the publication module's back is still named as no longer matching its hash. A search
// matches the searching principal's versions in its index, never every tenant's first.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HistoryCatalogDocument, LinkToWorkspaceDocument, SearchHistoryDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace, expectType, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MEGABYTE = "The cells double every cycle. ".repeat(33_000);

/** Statements that name a version's body (its hash and intact flag are not its body). */
const readsContent = (sql: string) => /\bcontent\b/i.test(sql.replace(/content_(hash|intact)|"content(Hash|Intact)"/gi, ""));

describe.each(backends)("history catalog read cost on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];
  const withParams: { sql: string; params: string }[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend, {
      database: () =>
        openMigratedTestDatabase(backend, {
          onQuery: (sql: string, params: string) => {
            statements.push(sql);
            withParams.push({ sql, params });
          },
        }),
    });
  });
  afterAll(() => t?.close());

  const catalogOf = async (workspaceId: string) =>
    expectType((await t.client.request(HistoryCatalogDocument, { workspaceId })).node!, "Workspace").historyCatalog;

  it("lists versions of nearly a megabyte each without reading their content, and still names an edited body", async () => {
    expect(MEGABYTE.length).toBeGreaterThan(950_000);
    const workspace = await createWorkspace(t.client);
    const base = await publish(t.client, { title: "Base", content: MEGABYTE });
    await publish(t.client, { publicationId: base.version.publication.id, content: `${MEGABYTE} v2` });
    const derived = await publish(t.client, {
      title: "Derived",
      content: `${MEGABYTE} derived`,
      sources: [{ publicationId: base.version.publication.id, version: 1 }],
    });
    for (const target of [base, derived]) {
      await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: target.version.publication.id } });
    }

    statements.length = 0;
    const catalog = await catalogOf(workspace.id);
    expect(catalog.entries.map((entry) => [entry.title, entry.versions.map((v) => [v.version, v.availability.status])])).toEqual([
      ["Derived", [[1, "AVAILABLE"]]],
      [
        "Base",
        [
          [2, "AVAILABLE"],
          [1, "AVAILABLE"],
        ],
      ],
    ]);
    expect(statements.length).toBeGreaterThan(0);
    expect(statements.filter(readsContent)).toEqual([]);

    // Someone edits the stored body behind the publication module's back: the next page says so.
    await t.app.db.prisma.$executeRawUnsafe(
      `UPDATE publication_version SET content = content || ' (edited)' WHERE publication_id = $1 AND version = 1`,
      idOfType(base.version.publication.id, "Publication"),
    );
    statements.length = 0;
    const after = await catalogOf(workspace.id);
    expect(statements.filter(readsContent)).toEqual([]);
    const availability = after.entries.flatMap((entry) =>
      entry.versions.map((v) => [entry.title, v.version, v.availability.status, v.availability.reason ?? null]),
    );
    expect(availability).toEqual([
      ["Derived", 1, "UNAVAILABLE", 'it depends on "Base" version 1, which no longer matches its content hash'],
      ["Base", 2, "AVAILABLE", null],
      ["Base", 1, "UNAVAILABLE", '"Base" version 1 no longer matches its content hash'],
    ]);
  });

  it("searches the principal's own versions in the index, without matching another principal's first", async () => {
    const other = t.as(await t.createPrincipal("another tenant"));
    for (let i = 0; i < 5; i += 1) await publish(other, { title: `Their notes ${i}`, content: "Lithium cells double their capacity." });
    const workspace = await createWorkspace(t.client);
    const mine = await publish(t.client, { title: "My notes", content: "Lithium cells double their capacity, per the survey." });
    await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: mine.version.publication.id } });

    withParams.length = 0;
    const result = expectType(
      (await t.client.request(SearchHistoryDocument, { workspaceId: workspace.id, query: "lithium capacity" })).searchHistory,
      "SearchHistorySuccess",
    );
    expect(result.hits.map((hit) => hit.title)).toEqual(["My notes"]);

    // The statement as the server sent it, planned as the database would run it on large tables:
    // the words are matched by the index that holds each version's owner, with the owner as an
    // index condition, so another principal's entries are never read.
    const search = withParams.find(({ sql }) => sql.includes("websearch_to_tsquery") && sql.includes("matched AS"));
    expect(search).toBeDefined();
    const params = JSON.parse(search!.params) as unknown[];
    const plan = await t.app.db.prisma.$transaction(async (tx) => {
      // On tables this small every plan is cheap: walking a whole table is ruled out, as it would
      // be on large ones, to see which index conditions the statement offers.
      await tx.$executeRawUnsafe("SET LOCAL enable_seqscan = off");
      await tx.$executeRawUnsafe("SET LOCAL enable_indexscan = off");
      const rows = await tx.$queryRawUnsafe<{ "QUERY PLAN": string }[]>(`EXPLAIN ${search!.sql}`, ...params);
      return rows.map((row) => row["QUERY PLAN"]).join("\n");
    });
    const ownerScan = /Bitmap Index Scan on publication_version_owner_content_words_idx.*\n\s*Index Cond: (.*)/.exec(plan);
    expect(ownerScan?.[1]).toMatch(/ARRAY\[owner_id\] @> .*AND.*content_words @@/);
  });
});
