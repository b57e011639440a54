// A page of linked runs reads only the columns its selection shows when every field selected on a
// run is one of the run's columns, as the typical workspace read's is — in the page's own
// statement; any other field (a computed one, a relation) reads the whole row, and the answers
// are the same either way.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "graphql";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace, startConversation } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const SHOWN = parse(/* GraphQL */ `
  query ($id: ID!) {
    workspace(id: $id) {
      links(first: 20) { edges { node { kind target { __typename ... on Run { id status question createdAt } ...Talk } } } }
    }
  }
  fragment Talk on Conversation { id title }
`);

// The same runs through a union fragment, an alias with a computed field and a relation next to a plain one.
const MIXED = parse(/* GraphQL */ `
  query ($id: ID!) {
    workspace(id: $id) {
      plain: links(first: 20) { edges { node { target { ...Shown } } } }
      full: links(first: 20) {
        edges { node { target { ... on Run { id question answer limits { maxTurns } agentProfile { id } } ... on Conversation { id title messages(first: 1) { edges { node { id } } } } } } }
      }
    }
  }
  fragment Shown on LinkTarget { ... on Run { id status question createdAt } }
`);

type Target = Record<string, unknown> | null;
type Page = { edges: { node: { kind?: string; target: Target } }[] };

describe.each(backends)("the columns a page of linked runs reads on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];
  // Statements of their own reading runs (the page's statement looks its runs up in a subquery).
  const runReads = () => statements.filter((sql) => /FROM "public"\."run"/.test(sql) && !sql.includes("workspace_link_page"));

  beforeAll(async () => {
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
  });
  afterAll(() => t?.close());

  it("reads the columns shown when each field selected is a column, and whole rows otherwise, with the same answers", async () => {
    const workspace = await createWorkspace(t.client);
    const goal = "a goal statement that a page of links never shows ".repeat(20);
    const other = await createWorkspace(t.client, goal);
    for (let i = 0; i < 3; i += 1) await admit(t.client, { workspaceId: other.id, question: `question ${i}` });
    const conversation = await startConversation(t.client, "Linked talk");
    await t.client.request(
      parse(`mutation ($input: LinkToWorkspaceInput!) { linkToWorkspace(input: $input) { __typename } }`) as never,
      { input: { workspaceId: other.id, targetId: conversation.id } } as never,
    );
    expect(workspace.id).not.toBe(other.id);

    statements.length = 0;
    const shown = (await t.client.request(SHOWN as never, { id: other.id } as never)) as { workspace: { links: Page } };
    // The runs come with the page: no statement of their own, and none of their other columns.
    const pages = statements.filter((sql) => sql.includes("workspace_link_page"));
    expect(pages).toHaveLength(1);
    expect(pages[0]).toMatch(/"run\.question"/);
    expect(pages[0]).not.toMatch(/configuration|goal_statement|answer|metadata/);
    expect(runReads()).toEqual([]);
    const targets = shown.workspace.links.edges.map(({ node }) => node.target!);
    expect(targets.filter((target) => target.__typename === "Run")).toHaveLength(3);
    expect(targets.find((target) => target.__typename === "Conversation")).toEqual({ __typename: "Conversation", id: conversation.id, title: "Linked talk" });

    statements.length = 0;
    const mixed = (await t.client.request(MIXED as never, { id: other.id } as never)) as { workspace: { plain: Page; full: Page } };
    // The plain page reads its runs with it; the other reads whole rows (and its relation reads its own).
    expect(
      statements
        .filter((sql) => sql.includes("workspace_link_page"))
        .map((sql) => /"run\.question"/.test(sql))
        .sort(),
    ).toEqual([false, true]);
    expect(runReads().filter((sql) => !/"configuration"/.test(sql))).toEqual([]);
    expect(runReads().filter((sql) => /"configuration"/.test(sql)).length).toBeGreaterThanOrEqual(1);
    const plain = mixed.workspace.plain.edges.map(({ node }) => node.target);
    const full = mixed.workspace.full.edges.map(({ node }) => node.target);
    expect(plain).toEqual(
      targets.map((target) =>
        target.__typename === "Run" ? { id: target.id, status: target.status, question: target.question, createdAt: target.createdAt } : {},
      ),
    );
    for (const [i, target] of targets.entries()) {
      if (target.__typename === "Run") {
        expect(full[i]).toMatchObject({ id: target.id, question: target.question, answer: null, limits: { maxTurns: expect.any(Number) } });
        expect(full[i]).toHaveProperty("agentProfile");
      } else {
        expect(full[i]).toEqual({ id: conversation.id, title: "Linked talk", messages: { edges: [] } });
      }
    }
  });
});
