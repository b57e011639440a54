// The typical workspace read looks up the runs its page of 20 links names by their key, however
// many runs their owner has: on both databases, with 2,000 other runs in the table and fresh
// statistics, the plan of the read's one statement (as it is sent, with its parameters) probes the
// run table's primary key once per link and never reads the whole table. Planned for the 1,000
// rows PostgreSQL assumes of a function returning a set, the join used to hash every run of the
// owner on every read (the embedded database's most expensive part of the read).
import { parse } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TYPICAL_WORKSPACE_READ } from "../../bench/support.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { seedRunsSql } from "../support/run-seed.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Read = { workspace: { links: { edges: { node: { target: { question: string } | null } }[] } } };

describe.each(backends)("the typical workspace read's plan on %s", (backend) => {
  let t: TestApp;
  const statements: { sql: string; params: unknown[] }[] = [];

  beforeAll(async () => {
    t = await startTestApp(backend, {
      database: () => openMigratedTestDatabase(backend, { onQuery: (sql, params) => statements.push({ sql, params: JSON.parse(params || "[]") }) }),
    });
  });
  afterAll(() => t?.close());

  it("probes the runs of its page by key with 2,000 other runs in the table", async () => {
    await t.app.db.withSession((session) => session.exec(seedRunsSql(2_000)));
    const workspace = await createWorkspace(t.client);
    for (let i = 0; i < 20; i += 1) await admit(t.client, { workspaceId: workspace.id, question: `question ${i}` });
    await t.app.db.withSession((session) => session.exec("ANALYZE"));

    statements.length = 0;
    const read = (await t.client.request(parse(TYPICAL_WORKSPACE_READ) as never, { id: workspace.id } as never)) as Read;
    expect(read.workspace.links.edges.map(({ node }) => node.target?.question)).toEqual(Array.from({ length: 20 }, (_, i) => `question ${19 - i}`));
    expect(statements).toHaveLength(1);

    const { sql, params } = statements[0]!;
    const plan = await t.app.db.withSession(async (session) =>
      (await session.query<Record<string, string>>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ${sql}`, params))
        .map((row) => Object.values(row)[0])
        .join("\n"),
    );
    expect(plan).toMatch(/Index Scan using run_pkey on run r .*rows=1(\.00)? loops=20/);
    expect(plan).not.toMatch(/Seq Scan on run|Hash/);
  });
});
