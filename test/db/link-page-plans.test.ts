// A page of a workspace's links walks the index from its cursor whatever the statistics say
// (PostgreSQL): on a workspace that has just received 2,000 links, before any ANALYZE has run
// (autovacuum is off for the table here, so none can), the typical workspace read's page of 20
// reads 21 index entries and sorts nothing — first pages, pages after a cursor and `last` pages
// alike — and returns the links in order. The plan is the one PostgreSQL really runs inside the
// page's function (auto_explain of the recorded statement, with its parameters).
import { parse } from "graphql";
import { Client } from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TYPICAL_WORKSPACE_READ } from "../../bench/support.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const LINKS_PAGE = parse(/* GraphQL */ `
  query ($id: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    workspace(id: $id) {
      links(first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { id createdAt } }
      }
    }
  }
`);

type Page = { workspace: { links: { edges: { cursor: string; node: { id: string; createdAt: string } }[] } } };

describe.runIf(backends.includes("postgres"))("plans of a page of links before ANALYZE (PostgreSQL)", () => {
  let t: TestApp;
  let url: string;
  let pg: Client;
  const statements: { sql: string; params: unknown[] }[] = [];
  const notices: string[] = [];

  beforeAll(async () => {
    t = await startTestApp("postgres", {
      database: async () => {
        const opened = await openMigratedTestDatabase("postgres", { onQuery: (sql, params) => statements.push({ sql, params: JSON.parse(params || "[]") }) });
        url = opened.url!;
        return opened;
      },
    });
    pg = new Client({ connectionString: url });
    await pg.connect();
    pg.on("notice", (notice) => notices.push(notice.message ?? ""));
    await pg.query(`ALTER TABLE workspace_link SET (autovacuum_enabled = false)`);
  });
  afterAll(async () => {
    await pg?.end();
    await t?.close();
  });

  /** The plan of the recorded links page statement as it runs, inside its function. */
  async function planOfPage(): Promise<string> {
    const page = statements.filter(({ sql }) => /workspace_link_page/.test(sql));
    expect(page).toHaveLength(1);
    notices.length = 0;
    await pg.query(`LOAD 'auto_explain'`);
    await pg.query(
      `SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_analyze = on; SET auto_explain.log_level = notice; SET client_min_messages = notice`,
    );
    await pg.query(page[0]!.sql, page[0]!.params as unknown[]);
    await pg.query(`SET auto_explain.log_min_duration = -1`);
    return notices.filter((notice) => /workspace_link AS k|"workspace_link" AS k/.test(notice)).join("\n");
  }

  const read = async (variables: Record<string, unknown>) => {
    statements.length = 0;
    return (await t.client.request(LINKS_PAGE as never, variables as never)) as Page;
  };

  it("walks the index for 21 entries on 2,000 fresh links, first page, after a cursor and last pages", async () => {
    const small = await createWorkspace(t.client);
    const large = await createWorkspace(t.client);
    for (const [workspace, count] of [
      [small, 20],
      [large, 2_000],
    ] as const) {
      await pg.query(
        `INSERT INTO workspace_link (id, workspace_id, target_kind, target_id, created_at)
         SELECT $1 || '-l' || lpad(i::text, 4, '0'), $1, 'RUN', 'r' || i, now() - i * interval '1 second' FROM generate_series(1, $2::int) i`,
        [idOfType(workspace.id, "Workspace"), count],
      );
    }
    const analysed = await pg.query(`SELECT last_analyze, last_autoanalyze FROM pg_stat_user_tables WHERE relname = 'workspace_link'`);
    expect(analysed.rows[0]).toEqual({ last_analyze: null, last_autoanalyze: null });

    // The typical workspace read, as the benchmark sends it.
    statements.length = 0;
    await t.client.request(parse(TYPICAL_WORKSPACE_READ) as never, { id: large.id } as never);
    const typical = await planOfPage();
    expect(typical).toMatch(/Index Scan using workspace_link_workspace_id_created_at_id_idx on workspace_link k .*actual time=[\d.]+ rows=21 loops=1/);
    expect(typical).not.toMatch(/Sort|Bitmap|Seq Scan/);

    const ids = (count: number) => Array.from({ length: count }, (_, i) => `${idOfType(large.id, "Workspace")}-l${String(i + 1).padStart(4, "0")}`);
    const all = ids(2_000);
    const first = await read({ id: large.id, first: 20 });
    expect(first.workspace.links.edges.map(({ node }) => idOfType(node.id, "WorkspaceLink"))).toEqual(all.slice(0, 20));

    const second = await read({ id: large.id, first: 20, after: first.workspace.links.edges.at(-1)!.cursor });
    expect(second.workspace.links.edges.map(({ node }) => idOfType(node.id, "WorkspaceLink"))).toEqual(all.slice(20, 40));
    const afterCursor = await planOfPage();
    expect(afterCursor).toMatch(/Index Scan using workspace_link_workspace_id_created_at_id_idx on workspace_link k .*rows=21 loops=1/);
    expect(afterCursor).not.toMatch(/Sort|Bitmap|Seq Scan/);

    const last = await read({ id: large.id, last: 5, before: second.workspace.links.edges[0]!.cursor });
    expect(last.workspace.links.edges.map(({ node }) => idOfType(node.id, "WorkspaceLink"))).toEqual(all.slice(15, 20));
    const lastPlan = await planOfPage();
    expect(lastPlan).toMatch(/Index Scan Backward using workspace_link_workspace_id_created_at_id_idx on workspace_link k .*rows=6 loops=1/);
    expect(lastPlan).not.toMatch(/Sort|Bitmap|Seq Scan/);

    const oldest = await read({ id: large.id, last: 3 });
    expect(oldest.workspace.links.edges.map(({ node }) => idOfType(node.id, "WorkspaceLink"))).toEqual(all.slice(1_997));
    const fewLinks = await read({ id: small.id, first: 50 });
    expect(fewLinks.workspace.links.edges).toHaveLength(20);
  });
});
