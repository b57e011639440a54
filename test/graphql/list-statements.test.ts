// A page of runs costs the same number of SQL statements whether it holds one run or twenty:
// each run's materials are read together with the others', not by one statement per run. A
// connection's count costs one statement when selected, and none when not.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "graphql";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace, publish } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const PAGE_OF_RUNS = parse(/* GraphQL */ `
  query ($id: ID!, $first: Int!) {
    workspace(id: $id) {
      links(first: $first) { edges { node { target { ... on Run { id materials { position publicationVersion { version } } } } } } }
    }
    runs(first: $first) { edges { node { id materials { position publicationVersion { version } } } } }
  }
`);

const COUNTED_PAGE_OF_RUNS = parse(/* GraphQL */ `
  query ($id: ID!, $first: Int!) {
    workspace(id: $id) {
      links(first: $first) { totalCount edges { node { target { ... on Run { id materials { position publicationVersion { version } } } } } } }
    }
    runs(first: $first) { totalCount countCapped edges { node { id materials { position publicationVersion { version } } } } }
  }
`);

describe.each(backends)("statements per page of runs on %s", (backend) => {
  let t: TestApp;
  const statements: string[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend, { database: () => openMigratedTestDatabase(backend, { onQuery: (sql) => statements.push(sql) }) });
  });
  afterAll(() => t?.close());

  it("reads every run's materials in one statement, however many runs the page holds", async () => {
    const workspace = await createWorkspace(t.client);
    const source = await publish(t.client, { title: "Source", content: "The cells double." });
    const materials = [{ publicationId: source.version.publication.id, version: 1 }];
    const statementsFor = async (first: number, document = PAGE_OF_RUNS) => {
      statements.length = 0;
      const result = (await t.client.request(document as never, { id: workspace.id, first } as never)) as {
        runs: { edges: { node: { materials: { position: number; publicationVersion: { version: number } }[] } }[] };
      };
      return { count: statements.filter((sql) => !/^\s*(BEGIN|COMMIT|SELECT 1)\b/i.test(sql)).length, result };
    };

    await admit(t.client, { workspaceId: workspace.id, question: "the first", materials });
    const one = await statementsFor(20);
    for (let i = 0; i < 19; i += 1) await admit(t.client, { workspaceId: workspace.id, question: `run ${i}`, materials });
    const twenty = await statementsFor(20);

    expect(twenty.result.runs.edges).toHaveLength(20);
    expect(twenty.result.runs.edges.every(({ node }) => node.materials.length === 1 && node.materials[0]!.publicationVersion.version === 1)).toBe(true);
    expect(twenty.count).toBe(one.count);
    // Counting both connections: one bounded COUNT each, however many runs the page holds.
    const counted = await statementsFor(20, COUNTED_PAGE_OF_RUNS);
    expect(counted.count).toBe(twenty.count + 2);
    expect(statements.filter((sql) => /^\s*SELECT\s+COUNT\(/i.test(sql))).toEqual([expect.stringMatching(/LIMIT \$\d+/), expect.stringMatching(/LIMIT \$\d+/)]);
    expect((await statementsFor(1, COUNTED_PAGE_OF_RUNS)).count).toBe(counted.count);
    expect((counted.result as unknown as { runs: { totalCount: number; countCapped: boolean } }).runs).toMatchObject({ totalCount: 20, countCapped: false });
  });
});
