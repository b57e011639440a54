// Every list the API serves is limited in SQL, not in memory: a page of 20 reads 20 rows (plus
// one to know there is more), however many the parent holds. Asserted from the statements the
// Prisma client sends, for every connection field of the schema and for `Workspace.goal`: a
// relation read in its parent's statement (a lateral join) has its own LIMIT there.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { getNamedType, isObjectType } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateApiKeyDocument, LinkToWorkspaceDocument, UpdateGoalDocument } from "../../sdk/generated/graphql.js";
import { openDatabase } from "../../src/db/open-database.js";
import { schema } from "../../src/graphql/schema.js";
import { createDemoModel } from "../../src/runtime/testing/scripted-model.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType, publish } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

/** One document that pages every connection field (two items a page) and reads every workspace's goal. */
const EVERY_LIST = /* GraphQL */ `
  query EveryList {
    workspaces(first: 2) {
      edges { node { id goal { version } goalVersions(first: 2) { edges { node { version } } pageInfo { hasNextPage endCursor } }
        links(first: 2) { edges { node { id } } pageInfo { hasNextPage } } } }
    }
    conversations(first: 2) {
      edges { node { messages(first: 2) { edges { node { id } } pageInfo { hasNextPage } } runs(first: 2) { edges { node { id messages(first: 2) { edges { node { id } } pageInfo { hasNextPage } } } } pageInfo { hasNextPage } } } }
    }
    publications(first: 2) { edges { node { versions(first: 2) { edges { node { version } } pageInfo { hasNextPage } } } } }
    runs(first: 2) { edges { node { id } } pageInfo { hasNextPage } }
    artifacts(first: 2) { edges { node { id } } }
    apiKeys(first: 2) { edges { node { id } } pageInfo { hasNextPage } }
  }
`;

/** Every field of the schema whose type is a connection, as Type.field. */
function connectionFields(): string[] {
  return Object.values(schema.getTypeMap())
    .filter(isObjectType)
    .filter((type) => !type.name.startsWith("__"))
    .flatMap((type) => Object.values(type.getFields()).filter((field) => getNamedType(field.type).name.endsWith("Connection")).map((field) => `${type.name}.${field.name}`))
    .sort();
}

describe.each(backends)("paged reads on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];
  let dropDatabase: (() => Promise<void>) | undefined;
  let historyWorkspaceId = "";

  beforeAll(async () => {
    const postgres = backend === "postgres" ? await createPostgresDatabase() : undefined;
    dropDatabase = postgres?.drop;
    t = await startTestApp(backend, {
      database: async () => {
        const db = await openDatabase(postgres ? { kind: "postgres", url: postgres.url } : { kind: "pglite" }, { onQuery: (sql) => statements.push(sql) });
        return { db, dispose: () => db.close() };
      },
      runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-paged-")), pollMs: 25 },
    });
    // More of everything than a page holds.
    const workspace = await createWorkspace(t.client);
    historyWorkspaceId = workspace.id;
    for (let version = 1; version <= 4; version += 1) {
      expectType((await t.client.request(UpdateGoalDocument, { input: { workspaceId: workspace.id, expectedVersion: version, statement: `Goal ${version + 1}` } })).updateGoal, "UpdateGoalSuccess");
    }
    await createWorkspace(t.client, "A second goal");
    await createWorkspace(t.client, "A third goal");
    const first = await admit(t.client, { question: "One", workspaceId: workspace.id });
    await settled(t.client, first.run.id);
    for (const question of ["Two", "Three"]) {
      const next = await admit(t.client, { question, conversationId: first.run.conversation.id, workspaceId: workspace.id });
      await settled(t.client, next.run.id);
    }
    await admit(t.client, { question: "Elsewhere" }).then(({ run }) => settled(t.client, run.id));
    const published = await publish(t.client, { title: "Report", content: "v1" });
    for (const content of ["v2", "v3"]) await publish(t.client, { publicationId: published.version.publication.id, content });
    for (const target of [published.version.publication.id]) {
      expectType((await t.client.request(LinkToWorkspaceDocument, { input: { workspaceId: workspace.id, targetId: target } })).linkToWorkspace, "LinkToWorkspaceSuccess");
    }
    for (const name of ["a", "b"]) await t.client.request(CreateApiKeyDocument, { input: { name } });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await dropDatabase?.();
  });

  it("the document below pages every connection field of the schema", () => {
    const paged = [...EVERY_LIST.matchAll(/(\w+)\(first:/g)].map((match) => match[1]);
    const covered = new Set(paged);
    // A field named here but missing from the document would be an unchecked list.
    expect(connectionFields().filter((field) => !covered.has(field.split(".")[1]!))).toEqual([]);
  });

  it("reads every page with LIMIT in SQL, the current goal and a page of links in the workspace's statement", async () => {
    statements.length = 0;
    const result = await graphql(t, EVERY_LIST);
    expect(result.errors).toBeUndefined();
    const reads = statements.filter((sql) => /^\s*SELECT/i.test(sql));
    const tables = ["workspace", "goal_version", "workspace_link", "conversation", "message", "run", "publication", "publication_version", "artifact", "api_key"];
    const unlimited = reads.filter((sql) => tables.some((table) => new RegExp(`FROM "public"\\."${table}"`).test(sql)) && !limitedThroughout(sql));
    expect(unlimited).toEqual([]);
    // A workspace's goal and page of links come in the workspaces' statement: goal_version is read
    // on its own only for the goalVersions pages (one a workspace), workspace_link never.
    const mainTable = (sql: string) => /FROM "public"\."(\w+)"/.exec(sql)?.[1];
    expect(reads.filter((sql) => mainTable(sql) === "workspace_link")).toEqual([]);
    expect(reads.filter((sql) => mainTable(sql) === "goal_version")).toHaveLength(2);
    // Every list was actually read (with more rows than a page).
    const data = result.data as {
      workspaces: { edges: { node: { goal: { version: number }; goalVersions: { pageInfo: { hasNextPage: boolean } } } }[] };
      conversations: { edges: { node: { messages: { pageInfo: { hasNextPage: boolean } }; runs: { pageInfo: { hasNextPage: boolean } } } }[] };
    };
    expect(data.workspaces.edges.map((edge) => edge.node.goal.version).sort()).toEqual([1, 1]);
    expect(data.conversations.edges.some((edge) => edge.node.messages.pageInfo.hasNextPage && edge.node.runs.pageInfo.hasNextPage)).toBe(true);
  });

  it("pages goal versions newest first, the cursor continuing where the page ended", async () => {
    const pages: number[][] = [];
    let after: string | null = null;
    do {
      const result = await graphql(t, HISTORY, { id: historyWorkspaceId, after });
      const history = (result.data as { node: { goalVersions: { edges: { node: { version: number } }[]; pageInfo: { hasNextPage: boolean; endCursor: string } } } }).node.goalVersions;
      pages.push(history.edges.map((edge) => edge.node.version));
      after = history.pageInfo.hasNextPage ? history.pageInfo.endCursor : null;
    } while (after);
    expect(pages).toEqual([[5, 4], [3, 2], [1]]);
  });

  it("pages links newest first both ways, links made in the same millisecond included, each exactly once", async () => {
    const workspace = await createWorkspace(t.client, "Many links");
    const id = Buffer.from(workspace.id, "base64").toString().split(":")[1]!;
    const sameInstant = new Date("2026-01-01T00:00:00.000Z");
    await t.app.db.prisma.workspaceLink.createMany({
      data: ["a", "b", "c", "d", "e"].map((name, i) => ({ workspaceId: id, targetKind: "RUN" as const, targetId: `run-${name}`, createdAt: i < 3 ? sameInstant : new Date(sameInstant.getTime() + i) })),
    });
    const expected = (await t.app.db.prisma.workspaceLink.findMany({ where: { workspaceId: id }, orderBy: [{ createdAt: "desc" }, { id: "desc" }] })).map((link) => link.id);
    expect(expected).toHaveLength(5);
    const ids = (edges: { node: { id: string } }[]) => edges.map((edge) => Buffer.from(edge.node.id, "base64").toString().split(":")[1]!);

    const forward: string[][] = [];
    let after: string | null = null;
    do {
      const links: LinksData["workspace"]["links"] = ((await graphql(t, LINKS, { id: workspace.id, first: 2, after })).data as LinksData).workspace.links;
      forward.push(ids(links.edges));
      after = links.pageInfo.hasNextPage ? links.pageInfo.endCursor : null;
    } while (after && forward.length < 10);
    expect(forward).toEqual([expected.slice(0, 2), expected.slice(2, 4), expected.slice(4)]);

    const backward: string[][] = [];
    let before: string | null = null;
    do {
      const links: LinksData["workspace"]["links"] = ((await graphql(t, LINKS, { id: workspace.id, last: 2, before })).data as LinksData).workspace.links;
      backward.unshift(ids(links.edges));
      before = links.pageInfo.hasPreviousPage ? links.pageInfo.startCursor : null;
    } while (before && backward.length < 10);
    expect(backward.flat()).toEqual(expected);

    const bogus = await graphql(t, LINKS, { id: workspace.id, first: 2, after: "bm90IGEgY3Vyc29y" });
    expect(JSON.stringify(bogus.errors)).toContain("after is not a cursor of this list");
  });
});

type LinksData = { workspace: { links: { edges: { node: { id: string } }[]; pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string; endCursor: string } } } };

const LINKS = /* GraphQL */ `
  query Links($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    workspace(id: $id) { links(first: $first, after: $after, last: $last, before: $before) { edges { node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }
  }
`;

const HISTORY = /* GraphQL */ `
  query History($id: ID!, $after: String) {
    node(id: $id) { ... on Workspace { goalVersions(first: 2, after: $after) { edges { node { version } } pageInfo { hasNextPage endCursor } } } }
  }
`;

async function graphql(t: TestApp, query: string, variables: Record<string, unknown> = {}): Promise<{ data?: unknown; errors?: unknown }> {
  const response = await t.app.yoga.fetch(new Request("http://dossier.test/graphql", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query, variables }),
  }));
  return (await response.json()) as { data?: unknown; errors?: unknown };
}

/** A read of goal versions by their unique key only: `(workspace_id = $a AND version = $b) OR …`. */
/** A LIMIT on the statement and on every relation it reads in a lateral join. */
function limitedThroughout(sql: string): boolean {
  const [outer, ...laterals] = sql.split(/JOIN LATERAL/i);
  return /\bLIMIT\b/i.test(sql) && [outer!, ...laterals].slice(laterals.length ? 1 : 0).every((part) => /\bLIMIT\b/i.test(part));
}
