// The typical workspace read — the workspace, its current goal and a page of its links with the
// runs they name — is one SQL statement on both databases, and answers exactly what the same
// selection answers when read part by part (through node(id), which reads the workspace, and then
// its page, on their own): every page of a cursor walk both ways, the newest goal after an
// update, the budget, and null for a workspace that is gone or not the caller's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "graphql";
import { DeleteWorkspaceDocument } from "../../sdk/generated/graphql.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const FIELDS = /* GraphQL */ `
  id title status createdAt archivedAt monthlyBudget
  goal { id version statement createdAt }
  links(first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { id kind createdAt target { __typename ... on Run { id status question createdAt } } } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
`;
const VARIABLES = `$id: ID!, $first: Int, $after: String, $last: Int, $before: String`;
const TOGETHER = parse(`query (${VARIABLES}) { workspace(id: $id) { ${FIELDS} } }`);
const APART = parse(`query (${VARIABLES}) { node(id: $id) { ... on Workspace { ${FIELDS} } } }`);

type Page = { edges: { cursor: string }[]; pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null } };
type Read = { title: string; monthlyBudget: string | null; goal: { version: number; statement: string }; links: Page };

describe.each(backends)("the typical workspace read on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
  });
  afterAll(() => t?.close());

  const request = async (document: typeof TOGETHER, variables: Record<string, unknown>) => {
    statements.length = 0;
    const answer = (await t.client.request(document as never, variables as never)) as { workspace?: Read | null; node?: Read | null };
    return { read: (answer.workspace !== undefined ? answer.workspace : answer.node) as Read, statements: statements.length };
  };

  it("is one statement and answers as the workspace and its page read apart, on every page both ways", async () => {
    const workspace = await createWorkspace(t.client);
    for (let i = 0; i < 5; i += 1) await admit(t.client, { workspaceId: workspace.id, question: `question ${i}` });
    await t.client.request(
      parse(`mutation ($input: UpdateGoalInput!) { updateGoal(input: $input) { __typename } }`) as never,
      { input: { workspaceId: workspace.id, statement: "The second goal", expectedVersion: 1 } } as never,
    );
    await t.client.request(
      parse(`mutation ($input: SetWorkspaceBudgetInput!) { setWorkspaceBudget(input: $input) { __typename } }`) as never,
      { input: { workspaceId: workspace.id, monthlyBudget: "12.5" } } as never,
    );

    const first = await request(TOGETHER, { id: workspace.id, first: 20 });
    expect(first.statements).toBe(1);
    expect(first.read.goal).toMatchObject({ version: 2, statement: "The second goal" });
    expect(first.read.monthlyBudget).toBe("12.5");
    expect(first.read.links.edges).toHaveLength(5);
    expect(first.read).toEqual((await request(APART, { id: workspace.id, first: 20 })).read);

    // Forwards two at a time, then backwards from the end.
    const walk = async (forwards: boolean) => {
      let cursor: string | null = null;
      let seen = 0;
      for (;;) {
        const variables = forwards ? { id: workspace.id, first: 2, after: cursor } : { id: workspace.id, last: 2, before: cursor };
        const together = await request(TOGETHER, variables);
        expect(together.statements).toBe(1);
        expect(together.read).toEqual((await request(APART, variables)).read);
        seen += together.read.links.edges.length;
        const { pageInfo } = together.read.links;
        if (!(forwards ? pageInfo.hasNextPage : pageInfo.hasPreviousPage)) return seen;
        cursor = forwards ? pageInfo.endCursor : pageInfo.startCursor;
      }
    };
    expect(await walk(true)).toBe(5);
    expect(await walk(false)).toBe(5);
  });

  it("reads a workspace without links, and null for one deleted or unknown, as before", async () => {
    const empty = await createWorkspace(t.client, "Nothing linked yet");
    const read = await request(TOGETHER, { id: empty.id, first: 20 });
    expect(read.statements).toBe(1);
    expect(read.read).toMatchObject({ goal: { version: 1, statement: "Nothing linked yet" }, links: { edges: [] } });
    expect(read.read).toEqual((await request(APART, { id: empty.id, first: 20 })).read);

    await t.client.request(DeleteWorkspaceDocument, { input: { workspaceId: empty.id } });
    expect((await request(TOGETHER, { id: empty.id, first: 20 })).read).toBeNull();
    const unknown = Buffer.from("Workspace:no-such-workspace").toString("base64");
    expect((await request(TOGETHER, { id: unknown, first: 20 })).read).toBeNull();
  });

  it("answers a cursor that is not one of the list's with the same error as before", async () => {
    const workspace = await createWorkspace(t.client);
    const after = Buffer.from("oldest:1:x").toString("base64url");
    const error = await t.client.request(TOGETHER as never, { id: workspace.id, first: 2, after } as never).catch((caught: unknown) => caught);
    expect(String(error)).toMatch(/after is not a cursor of this list/);
  });
});
