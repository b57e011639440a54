// A page of the history catalog costs what the page lists, not what the listed versions hold:
// listing versions with nearly a megabyte of content each reads none of that content (whether a body
// still matches its hash is kept by the database when the body is written), and a body edited
// behind the publication module's back is still named as no longer matching its hash.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HistoryCatalogDocument, LinkToWorkspaceDocument } from "../../sdk/generated/graphql.js";
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

  beforeAll(async () => {
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
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
});
