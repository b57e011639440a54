// The embedded database (PGlite runs no autovacuum) analyses a table within seconds of it growing,
// not only every few minutes: a server that goes from nothing to thousands of rows in its first
// minutes otherwise keeps plans made for empty tables. An idle one analyses nothing.
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, inject, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/open-database.js";
import { readDataDirCopy } from "../../src/db/pglite-copy.js";

const PAGE_OF_LINKS = `EXPLAIN SELECT * FROM workspace_link WHERE workspace_id = 'w' ORDER BY created_at DESC, id DESC LIMIT 21`;

let db: Database | undefined;
afterEach(async () => {
  await db?.close();
  db = undefined;
});

async function opened(options: { growthCheckEveryMs: number; analyzeEveryMs?: number }): Promise<Database> {
  // A copy of the test run's migrated database (test/support/database-templates.ts).
  db = await openDatabase({ kind: "pglite", loadDataDir: readDataDirCopy(readFileSync(inject("pgliteTemplateDump"))) }, options);
  await db.migrate();
  await db.prisma.$executeRawUnsafe(`INSERT INTO principal (id, name) VALUES ('p', 'p')`);
  await db.prisma.$executeRawUnsafe(`INSERT INTO workspace (id, owner_id, title, goal_version, updated_at) VALUES ('w', 'p', 'Large', 1, now())`);
  return db;
}

const addLinks = (db: Database, from: number, to: number) =>
  db.prisma.$executeRawUnsafe(
    `INSERT INTO workspace_link (id, workspace_id, target_kind, target_id, created_at)
     SELECT 'l' || g, 'w', 'RUN', 'r' || g, now() - g * interval '1 second' FROM generate_series(${from}, ${to}) g`,
  );

/** The link table's row count as the planner's statistics have it (-1: never analysed). */
const analysedRows = async (db: Database) =>
  (await db.prisma.$queryRawUnsafe<{ rows: number }[]>(`SELECT reltuples::int AS rows FROM pg_class WHERE oid = 'workspace_link'::regclass`))[0]!.rows;

/** The next transaction id: every ANALYZE (and every write) takes some. */
const nextTransaction = async (db: Database) =>
  (await db.prisma.$queryRawUnsafe<{ xid: string }[]>(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid`))[0]!.xid;

const plan = async (db: Database) => (await db.prisma.$queryRawUnsafe<{ "QUERY PLAN": string }[]>(PAGE_OF_LINKS)).map((row) => row["QUERY PLAN"]).join("\n");

describe("the embedded database's planner statistics", () => {
  it("are gathered within seconds for a table that grew from empty, the full refresh minutes away", async () => {
    const db = await opened({ growthCheckEveryMs: 100 });
    expect(await analysedRows(db)).toBe(0);
    await addLinks(db, 1, 2000);
    // A page of a large workspace's links reads its index in order, instead of every link sorted.
    await expect.poll(() => plan(db), { timeout: 5_000, interval: 100 }).toMatch(/Index Scan using workspace_link_workspace_id_created_at_id_idx/);
    expect(await plan(db)).not.toMatch(/Sort/);
    expect(await analysedRows(db)).toBeGreaterThan(1900);
    const columns = await db.prisma.$queryRawUnsafe<{ attname: string }[]>(`SELECT attname FROM pg_stats WHERE tablename = 'workspace_link' ORDER BY attname`);
    expect(columns.map(({ attname }) => attname)).toContain("workspace_id");
  });

  it("are gathered again once a table grew by a fifth, not for every few rows", async () => {
    const db = await opened({ growthCheckEveryMs: 50 });
    await addLinks(db, 1, 2000);
    await expect.poll(() => analysedRows(db), { timeout: 5_000, interval: 50 }).toBeGreaterThan(1900);
    const analysed = await analysedRows(db);
    await addLinks(db, 2001, 2100);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await analysedRows(db)).toBe(analysed);
    await addLinks(db, 2101, 4000);
    await expect.poll(() => analysedRows(db), { timeout: 5_000, interval: 50 }).toBeGreaterThan(3800);
  });

  it("are refreshed for rows deleted by the periodic full ANALYZE, and an idle database analyses nothing", async () => {
    const db = await opened({ growthCheckEveryMs: 50, analyzeEveryMs: 200 });
    await addLinks(db, 1, 2000);
    await expect.poll(() => analysedRows(db), { timeout: 5_000, interval: 50 }).toBeGreaterThan(1900);
    // Deleted rows leave the table's pages as they were: only the full refresh sees them go.
    await db.prisma.$executeRawUnsafe(`DELETE FROM workspace_link WHERE length(id) > 4`);
    await expect.poll(() => analysedRows(db), { timeout: 5_000, interval: 50 }).toBeLessThan(1100);
    // Nothing written since: neither the growth check (every 50 ms) nor the full refresh (every 200 ms) analyses.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const idle = await nextTransaction(db);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await nextTransaction(db)).toBe(idle);
  });
});
