// Test databases start as copies of the run's migrated template (test/support/database-templates.ts),
// read once per process: each copy is a database of its own (sharing the copy's bytes until it
// writes a file), migrated and with its planner statistics as the template's ANALYZE left them,
// and one marked analysed does not analyse again before it is written to.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { afterEach, describe, expect, inject, it } from "vitest";
import { type Database, type OpenOptions, openDatabase } from "../../src/db/open-database.js";
import { type DataDirCopy, memoryFsHolding, readDataDirCopy } from "../../src/db/pglite-copy.js";
import { releaseInstallationFiles } from "../../src/db/pglite-files.js";

const template = readFileSync(inject("pgliteTemplateDump"));
const opened: Database[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()));
});

async function open(copy: DataDirCopy, options?: OpenOptions & { dataDir?: string }): Promise<Database> {
  const db = await openDatabase({ kind: "pglite", loadDataDir: copy, dataDir: options?.dataDir }, options);
  opened.push(db);
  return db;
}

/** The next transaction id: every write and every ANALYZE takes one. */
const nextTransaction = async (db: Database) =>
  (await db.prisma.$queryRawUnsafe<{ xid: string }[]>(`SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid`))[0]!.xid;

const principals = async (db: Database) => (await db.prisma.$queryRawUnsafe<{ id: string }[]>(`SELECT id FROM principal ORDER BY id`)).map((row) => row.id);

describe("a copy of the migrated template", () => {
  it("holds every migration, and each copy of one read is a database of its own", async () => {
    const copy = readDataDirCopy(template);
    const first = await open(copy);
    expect(await first.migrate()).toMatchObject({ applied: [] });
    await first.prisma.$executeRawUnsafe(`INSERT INTO principal (id, name) VALUES ('first', 'first')`);
    await first.withSession((session) => session.exec("CHECKPOINT"));
    const second = await open(copy);
    await second.prisma.$executeRawUnsafe(`INSERT INTO principal (id, name) VALUES ('second', 'second')`);
    const third = await open(copy);
    expect([await principals(first), await principals(second), await principals(third)]).toEqual([["first"], ["second"], []]);
    expect((await third.migrate()).alreadyApplied.length).toBeGreaterThan(20);
  });

  it("goes into a new data folder, which a restart opens as it was left", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-copy-"));
    try {
      const db = await open(readDataDirCopy(template), { dataDir: dir });
      expect(await db.migrate()).toMatchObject({ applied: [] });
      await db.prisma.$executeRawUnsafe(`INSERT INTO principal (id, name) VALUES ('kept', 'kept')`);
      await db.close();
      opened.splice(opened.indexOf(db), 1);
      const again = await openDatabase({ kind: "pglite", dataDir: dir });
      opened.push(again);
      expect(await principals(again)).toEqual(["kept"]);
    } finally {
      await Promise.all(opened.splice(0).map((db) => db.close()));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("marked analysed, analyses nothing when migrated, and everything after its first write", async () => {
    const analysed = await open(readDataDirCopy(template, { analysed: true }), { analyzeEveryMs: 100 });
    const atStart = await nextTransaction(analysed);
    await analysed.migrate();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await nextTransaction(analysed)).toBe(atStart);
    await analysed.prisma.$executeRawUnsafe(`INSERT INTO principal (id, name) VALUES ('p', 'p')`);
    // The write took one transaction; the full ANALYZE that follows takes another.
    await expect.poll(async () => BigInt(await nextTransaction(analysed)) - BigInt(atStart), { timeout: 5_000, interval: 50 }).toBeGreaterThan(1n);

    // Not marked, the first migrate analyses every table, as after applying migrations.
    const unmarked = await open(readDataDirCopy(template));
    const before = await nextTransaction(unmarked);
    await unmarked.migrate();
    expect(BigInt(await nextTransaction(unmarked))).toBeGreaterThan(BigInt(before));
  });

  it("shares the copy's bytes with each database until a file is written, and keeps them as they were", async () => {
    const bytes = Buffer.from(template);
    const copy = readDataDirCopy(bytes);
    const pglite = await PGlite.create({ fs: memoryFsHolding(copy) });
    try {
      releaseInstallationFiles(pglite);
      await pglite.exec(`INSERT INTO principal (id, name) VALUES ('p', 'p'); CHECKPOINT`);
      const fs = (pglite as unknown as { mod: { FS: { lookupPath(path: string): { node: { contents: Uint8Array } } } } }).mod.FS;
      const contents = (file: string) => fs.lookupPath(`/pglite/data/${file}`).node.contents;
      // Compared as booleans: a failure's diff of 43 MB buffers would exhaust the heap.
      expect(contents("PG_VERSION").buffer === bytes.buffer).toBe(true);
      const principal = (await pglite.query<{ file: string }>(`SELECT pg_relation_filepath('principal') AS file`)).rows[0]!.file;
      expect(contents(principal).buffer === bytes.buffer).toBe(false);
      expect(bytes.byteLength).toBe(template.byteLength);
      expect(bytes.equals(template)).toBe(true);
    } finally {
      await pglite.close();
    }
  });

  it("is of a database shut down cleanly, so a copy starts without crash recovery", () => {
    const control = readDataDirCopy(template).files.find((file) => file.path === "global/pg_control")!.data;
    // pg_control's state, after the system identifier and two version numbers: 1 is shut down (6: in production).
    expect(Buffer.from(control.buffer, control.byteOffset, control.byteLength).readUInt32LE(16)).toBe(1);
  });

  it("refuses what is not a tar file", () => {
    expect(() => readDataDirCopy(Buffer.from("x".repeat(1024)))).toThrow(/not a tar file/);
  });
});
