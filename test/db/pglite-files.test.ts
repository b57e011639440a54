// The embedded database lets go of the PostgreSQL installation files a running database never reads
// (initdb's inputs, the build system, encoding conversions, ICU's collation data;
// src/db/pglite-files.ts), and still
// does what Dossier and its users ask of it: time zones, text search, PL/pgSQL, a restart.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { afterAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/open-database.js";
import { releaseInstallationFiles } from "../../src/db/pglite-files.js";

describe("the embedded database's installation files", () => {
  const folders: string[] = [];
  afterAll(() => {
    for (const dir of folders) rmSync(dir, { recursive: true, force: true });
  });

  it("are released once the database is open: the 6 MB buffer they shared goes, 4.6 MB of them with it", async () => {
    const pglite = await PGlite.create();
    try {
      const released = releaseInstallationFiles(pglite);
      expect(released.releasedBytes).toBeGreaterThan(6_000_000);
      expect(released.removedBytes).toBeGreaterThan(4_500_000);
      // ICU's collation data (0.9 MB): the databases use the libc provider's C locale.
      const fs = (pglite as unknown as { mod: { FS: { analyzePath(path: string): { exists: boolean } } } }).mod.FS;
      expect(fs.analyzePath("/pglite/icu/icudt76l/coll/ucadata.icu").exists).toBe(false);
      expect(released.copiedBytes).toBeLessThan(released.releasedBytes - released.removedBytes + 1);
      // Released already: nothing left to do a second time.
      expect(releaseInstallationFiles(pglite)).toEqual({ removed: 0, removedBytes: 0, copiedBytes: 0, releasedBytes: 0 });
    } finally {
      await pglite.close();
    }
  });

  it("leave a database that reads time zones, searches text, runs PL/pgSQL and opens its folder again", { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "dossier-pglite-files-"));
    folders.push(dataDir);
    const query = async (db: Database, sql: string) => db.prisma.$queryRawUnsafe<Record<string, unknown>[]>(sql);
    let db = await openDatabase({ kind: "pglite", dataDir });
    try {
      await db.migrate();
      expect(await query(db, `SELECT to_char(timestamptz '2026-07-01 12:00Z' AT TIME ZONE 'Europe/Paris', 'HH24:MI') AS paris`)).toEqual([{ paris: "14:00" }]);
      expect(await query(db, `SELECT to_tsvector('english', 'The running dogs')::text AS words`)).toEqual([{ words: "'dog':3 'run':2" }]);
      await db.prisma.$executeRawUnsafe(`CREATE FUNCTION twice(n int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 2 * n; END $$`);
      expect(await query(db, "SELECT twice(21) AS n")).toEqual([{ n: 42 }]);
    } finally {
      await db.close();
    }
    db = await openDatabase({ kind: "pglite", dataDir });
    try {
      expect(await query(db, "SELECT twice(2) AS n, current_setting('TimeZone') AS zone")).toEqual([{ n: 4, zone: expect.any(String) }]);
    } finally {
      await db.close();
    }
  });
});
