// The embedded database keeps its planner statistics current itself (PGlite runs no autovacuum):
// without them, a page of 20 links on a workspace with 2,000 is planned as a read of all 2,000.
// Its buffer pool is 8 MB, not PostgreSQL's 128 MB, which PGlite would touch in full at start.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/open-database.js";

const PAGE_OF_LINKS = `EXPLAIN SELECT * FROM workspace_link WHERE workspace_id = 'w' ORDER BY created_at DESC, id DESC LIMIT 21`;

describe("the embedded database", () => {
  let db: Database;
  beforeAll(async () => {
    db = await openDatabase({ kind: "pglite" }, { analyzeEveryMs: 300 });
    await db.migrate();
  });
  afterAll(async () => db?.close());

  const plan = async () => (await db.prisma.$queryRawUnsafe<{ "QUERY PLAN": string }[]>(PAGE_OF_LINKS)).map((row) => row["QUERY PLAN"]).join("\n");

  it("holds a 2 MB buffer pool and keeps no per-table activity counters", async () => {
    expect(await db.prisma.$queryRawUnsafe("SHOW shared_buffers")).toEqual([{ shared_buffers: "2MB" }]);
    expect(await db.prisma.$queryRawUnsafe("SHOW track_counts")).toEqual([{ track_counts: "off" }]);
  });

  it("refreshes its planner statistics while the server runs, so a page of a large workspace reads its index in order", async () => {
    // One transaction holds the embedded database's one connection, so no refresh runs before the first plan.
    const before = await db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe(`INSERT INTO principal (id, name) VALUES ('p', 'p')`);
      await tx.$executeRawUnsafe(`INSERT INTO workspace (id, owner_id, title, goal_version, updated_at) VALUES ('w', 'p', 'Large', 1, now())`);
      await tx.$executeRawUnsafe(
        `INSERT INTO workspace_link (id, workspace_id, target_kind, target_id, created_at)
         SELECT 'l' || g, 'w', 'RUN', 'r' || g, now() - g * interval '1 second' FROM generate_series(1, 2000) g`,
      );
      return (await tx.$queryRawUnsafe<{ "QUERY PLAN": string }[]>(PAGE_OF_LINKS)).map((row) => row["QUERY PLAN"]).join("\n");
    });
    // Statistics from the start (empty tables): the page is planned as a scan of every link, then sorted.
    expect(before).toMatch(/Sort/);
    await expect.poll(plan, { timeout: 5_000, interval: 100 }).toMatch(/Index Scan using workspace_link_workspace_id_created_at_id_idx/);
    expect(await plan()).not.toMatch(/Sort/);
  });
});
