// A new embedded data folder is initialised and migrated in a child process (src/db/pglite-initdb.ts):
// the server's own PGlite opens a database that is ready, its migrations' DDL never ran in the
// server's memory, and the start still says which migrations it applied. A migration that fails
// there is left to the server's runner, which records the failure as before.
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MigrationError, type Migration, readMigrations } from "../../src/db/migrate.js";
import { openDatabase } from "../../src/db/open-database.js";

const migration = (name: string, sql: string): Migration => ({ name, sql, checksum: createHash("sha256").update(sql).digest("hex") });

type Row = { migration_name: string; finished: boolean; rolled_back: boolean };
const BOOKKEEPING = `SELECT migration_name, finished_at IS NOT NULL AS finished, rolled_back_at IS NOT NULL AS rolled_back
                       FROM "_prisma_migrations" ORDER BY started_at`;

describe("a new embedded data folder", () => {
  const folders: string[] = [];
  const newFolder = () => {
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-initdb-"));
    folders.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  });

  it("opens migrated: the start reports every migration applied once, and a restart none", { timeout: 120_000 }, async () => {
    const dataDir = newFolder();
    const names = readMigrations().map((m) => m.name);
    const db = await openDatabase({ kind: "pglite", dataDir });
    try {
      // Before the server's runner: every migration is there already, finished.
      const rows = await db.prisma.$queryRawUnsafe<Row[]>(BOOKKEEPING);
      expect(rows.map((row) => row.migration_name)).toEqual(names);
      expect(rows.every((row) => row.finished && !row.rolled_back)).toBe(true);
      expect(await db.migrate()).toEqual({ applied: names, alreadyApplied: [], unknownInDatabase: [] });
      expect(await db.readiness()).toEqual({ ready: true });
      // The schema is usable.
      await db.prisma.$executeRawUnsafe(`INSERT INTO principal (id, name) VALUES ('p', 'p')`);
    } finally {
      await db.close();
    }
    const again = await openDatabase({ kind: "pglite", dataDir });
    try {
      expect(await again.migrate()).toEqual({ applied: [], alreadyApplied: names, unknownInDatabase: [] });
    } finally {
      await again.close();
    }
  });

  it("leaves a migration that fails to the server's runner, which records the failure and stops", { timeout: 120_000 }, async () => {
    const migrations = [
      migration("20260101000000_first", `CREATE TABLE first_table (id TEXT PRIMARY KEY);`),
      migration("20260102000000_broken", `CREATE TABLE second_table (id TEXT PRIMARY KEY); SELECT * FROM no_such_table;`),
      migration("20260103000000_after", `CREATE TABLE third_table (id TEXT PRIMARY KEY);`),
    ];
    const db = await openDatabase({ kind: "pglite", dataDir: newFolder() }, { migrations });
    try {
      const error = await db.migrate().catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(MigrationError);
      expect((error as Error).message).toContain("20260102000000_broken");
      expect(await db.prisma.$queryRawUnsafe<Row[]>(BOOKKEEPING)).toEqual([
        { migration_name: "20260101000000_first", finished: true, rolled_back: false },
        { migration_name: "20260102000000_broken", finished: false, rolled_back: true },
      ]);
      // The failed migration's own statements were rolled back, and nothing after it ran.
      const tables = await db.prisma.$queryRawUnsafe<{ name: string }[]>(
        `SELECT tablename AS name FROM pg_tables WHERE tablename IN ('first_table', 'second_table', 'third_table') ORDER BY 1`,
      );
      expect(tables).toEqual([{ name: "first_table" }]);
    } finally {
      await db.close();
    }
  });
});
