// S3: migrations applied at start on PGlite and PostgreSQL, compatible with Prisma's bookkeeping.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { defaultMigrationsDir, type Migration, MigrationError, readMigrations } from "../../src/db/migrate.js";
import { backends, createPostgresDatabase, openTestDatabase } from "../support/databases.js";
import { spawnTs } from "../support/processes.js";

const shipped = readMigrations();
const extra = (name: string, sql: string): Migration => ({
  name,
  sql,
  checksum: createHash("sha256").update(sql).digest("hex"),
});

describe.each(backends)("migrations on %s", (backend) => {
  const disposers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (disposers.length) await disposers.pop()!();
  });
  const fresh = async () => {
    const opened = await openTestDatabase(backend);
    disposers.push(opened.dispose);
    return opened.db;
  };
  const rows = (db: Awaited<ReturnType<typeof fresh>>) =>
    db.prisma.$queryRawUnsafe<{ migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null; logs: string | null }[]>(
      `SELECT migration_name, checksum, finished_at, rolled_back_at, logs FROM "_prisma_migrations" ORDER BY started_at, migration_name`,
    );

  it("applies every migration to a fresh database and records it as Prisma does", async () => {
    const db = await fresh();
    expect(await db.readiness()).toMatchObject({ ready: false, reason: expect.stringContaining("pending migrations") });
    const report = await db.migrate();
    expect(report.applied).toEqual(shipped.map((m) => m.name));
    const recorded = await rows(db);
    expect(recorded.map((r) => r.migration_name)).toEqual(shipped.map((m) => m.name));
    for (const row of recorded) {
      const sql = readFileSync(path.join(defaultMigrationsDir, row.migration_name, "migration.sql"));
      expect(row.checksum).toBe(createHash("sha256").update(sql).digest("hex"));
      expect(row.finished_at).not.toBeNull();
    }
    expect(await db.prisma.workspace.count()).toBe(0);
    expect(await db.readiness()).toEqual({ ready: true });
  });

  it("applies nothing to an already migrated database and keeps its data", async () => {
    const db = await fresh();
    await db.migrate();
    await db.prisma.principal.create({ data: { id: "p1", name: "p" } });
    await db.prisma.workspace.create({ data: { ownerId: "p1", title: "kept", goalVersion: 1, goalVersions: { create: { version: 1, statement: "g" } } } });
    const again = await db.migrate();
    expect(again).toEqual({ applied: [], alreadyApplied: shipped.map((m) => m.name), unknownInDatabase: [] });
    expect((await rows(db)).length).toBe(shipped.length);
    expect(await db.prisma.workspace.count()).toBe(1);
  });

  it("stops at a failing migration, rolls it back whole, records why, and applies it once fixed", async () => {
    const db = await fresh();
    const broken = [
      ...shipped,
      extra("20990101000000_add_notes", `CREATE TABLE notes (id TEXT PRIMARY KEY);\nSELECT * FROM no_such_table;`),
      extra("20990102000000_after", `CREATE TABLE after_failure (id TEXT);`),
    ];
    const withBroken = db.migrate(broken);
    await expect(withBroken).rejects.toBeInstanceOf(MigrationError);
    await expect(withBroken).rejects.toThrow(/20990101000000_add_notes failed and was rolled back/);
    const tables = await db.prisma.$queryRawUnsafe<{ name: string | null }[]>(
      `SELECT to_regclass('notes')::text AS name UNION ALL SELECT to_regclass('after_failure')::text`,
    );
    expect(tables.map((t) => t.name)).toEqual([null, null]);
    const failed = (await rows(db)).find((r) => r.migration_name === "20990101000000_add_notes");
    expect(failed).toMatchObject({ finished_at: null, logs: expect.stringContaining("no_such_table") });
    expect(failed?.rolled_back_at).not.toBeNull();

    const fixed = [...shipped, extra("20990101000000_add_notes", `CREATE TABLE notes (id TEXT PRIMARY KEY);`)];
    expect((await db.migrate(fixed)).applied).toEqual(["20990101000000_add_notes"]);
  });

  it("upgrades a database holding workspaces from before principals: they belong to the development principal", async () => {
    const db = await fresh();
    const [init, ...rest] = shipped;
    await db.migrate([init!]);
    await db.prisma.$executeRawUnsafe(`INSERT INTO workspace (id, title, goal_version, updated_at) VALUES ('w-old', 'Old', 1, now())`);
    expect((await db.migrate()).applied).toEqual(rest.map((m) => m.name));
    const [row] = await db.prisma.$queryRawUnsafe<{ owner_id: string; name: string }[]>(
      `SELECT w.owner_id, p.name FROM workspace w JOIN principal p ON p.id = w.owner_id WHERE w.id = 'w-old'`,
    );
    expect(row).toEqual({ owner_id: "development", name: "Development principal" });
  });

  it("upgrades checkpoint revisions from before per-section provenance: every section inherits its revision's author and sources", async () => {
    const db = await fresh();
    const at = shipped.findIndex((m) => m.name.endsWith("_checkpoint_section_provenance"));
    expect(at).toBeGreaterThan(0);
    await db.migrate(shipped.slice(0, at));
    await db.prisma.$executeRawUnsafe(`INSERT INTO principal (id, name) VALUES ('p1', 'Owner')`);
    await db.prisma.$executeRawUnsafe(
      `INSERT INTO workspace (id, owner_id, title, goal_version, updated_at, checkpoint_revision) VALUES ('w1', 'p1', 'Old', 1, now(), 2)`,
    );
    await db.prisma.$executeRawUnsafe(
      `INSERT INTO checkpoint_version (id, workspace_id, revision, summary, next_steps, questions, origin, author_id, origin_run_id, source_version_ids)
       VALUES ('c1', 'w1', 1, 'Model view', '["check prices"]', '[{"id":"q1","text":"Which?","status":"OPEN"},{"id":"q2","text":"Who?","status":"RESOLVED"}]',
               'MODEL_SUGGESTION', 'p1', 'r1', '["v1","v2"]'),
              ('c2', 'w1', 2, NULL, '[]', '[{"id":"q1","text":"Which?","status":"RESOLVED"}]', 'USER', 'p1', NULL, '["v3"]')`,
    );
    await db.migrate();
    const [model, user] = await db.prisma.checkpointVersion.findMany({ orderBy: { revision: "asc" } });
    const byRun = { author: { kind: "MODEL_RUN", runId: "r1", principalId: "p1" }, sourceVersionIds: ["v1", "v2"] };
    expect(model!.sections).toEqual({ summary: byRun, nextSteps: byRun, questions: { q1: byRun, q2: byRun } });
    const byOwner = { author: { kind: "OWNER", principalId: "p1" }, sourceVersionIds: ["v3"] };
    // Empty sections say nothing, so they rest on nothing.
    expect(user!.sections).toEqual({ summary: null, nextSteps: null, questions: { q1: byOwner } });
  });

  it("upgrades ledger entries whose reason names a version their version rests on: each gets that reason worded without it", async () => {
    const db = await fresh();
    const at = shipped.findIndex((m) => m.name.endsWith("_material_use_unnamed_reason"));
    expect(at).toBeGreaterThan(0);
    await db.migrate(shipped.slice(0, at));
    await db.prisma.$executeRawUnsafe(`INSERT INTO principal (id, name) VALUES ('p1', 'Owner')`);
    await db.prisma.$executeRawUnsafe(`INSERT INTO conversation (id, owner_id, title) VALUES ('c1', 'p1', 'Chat')`);
    await db.prisma.$executeRawUnsafe(
      `INSERT INTO run (id, owner_id, conversation_id, agent, question, max_turns, token_budget, deadline_seconds, deadline_at, configuration)
       VALUES ('r1', 'p1', 'c1', 'default', 'Q', 1, 1000, 60, now(), '{}')`,
    );
    await db.prisma.$executeRawUnsafe(
      `INSERT INTO material_use (id, run_id, publication_id, version, stage, reason) VALUES
         ('u1', 'r1', 'pub1', 1, 'UNAVAILABLE', 'it depends on "B''s notes" version 2, which was revoked: legal hold'),
         ('u2', 'r1', 'pub2', 1, 'UNAVAILABLE', 'it depends on "B''s notes" version 2, which no longer matches its content hash'),
         ('u3', 'r1', 'pub3', 1, 'UNAVAILABLE', '"A''s notes" version 1 was revoked: superseded'),
         ('u4', 'r1', 'pub4', 1, 'UNAVAILABLE', 'there is no version 1 of that publication that you may read'),
         ('u5', 'r1', 'pub5', 1, 'SELECTED', NULL)`,
    );
    await db.migrate();
    const rows = await db.prisma.materialUse.findMany({ orderBy: { id: "asc" }, select: { id: true, culpritPublicationId: true, unnamedReason: true } });
    expect(rows).toEqual([
      { id: "u1", culpritPublicationId: null, unnamedReason: "it rests on a version outside this token's reach, which was revoked" },
      { id: "u2", culpritPublicationId: null, unnamedReason: "it rests on a version outside this token's reach, which no longer matches its content hash" },
      { id: "u3", culpritPublicationId: null, unnamedReason: null },
      { id: "u4", culpritPublicationId: null, unnamedReason: null },
      { id: "u5", culpritPublicationId: null, unnamedReason: null },
    ]);
  });

  it("refuses to start when an applied migration was edited", async () => {
    const db = await fresh();
    await db.migrate();
    const edited = shipped.map((m, i) => (i === 0 ? extra(m.name, `${m.sql}\n-- edited`) : m));
    await expect(db.migrate(edited)).rejects.toThrow(/was changed after it was applied/);
  });
});

describe.runIf(backends.includes("postgres"))("concurrent migrations on one PostgreSQL database", () => {
  it("lets two processes start at once and applies each migration exactly once", async () => {
    const database = await createPostgresDatabase();
    try {
      // A slow extra migration keeps the first process inside the lock while the second arrives.
      const dir = await makeMigrationsDir([{ name: "20990101000000_slow", sql: "SELECT pg_sleep(1.5);\nCREATE TABLE slow_marker (id INT);\n" }]);
      const run = () => spawnTs("scripts/migrate.ts", { env: { DATABASE_URL: database.url }, args: ["--migrations", dir] });
      const [a, b] = [run(), run()];
      const [exitA, exitB] = await Promise.all([a.exited, b.exited]);
      expect([exitA.code, exitB.code], a.output() + b.output()).toEqual([0, 0]);
      const reports = [a, b].map((p) => JSON.parse(p.output().trim().split("\n").at(-1)!) as { applied: string[]; alreadyApplied: string[] });
      const appliedTotal = reports.flatMap((r) => r.applied).sort();
      expect(appliedTotal).toEqual([...shipped.map((m) => m.name), "20990101000000_slow"].sort());
      expect(reports.some((r) => r.applied.length === 0 && r.alreadyApplied.length === shipped.length + 1)).toBe(true);

      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      const { rows } = await client.query(`SELECT migration_name, count(*)::int AS n FROM "_prisma_migrations" GROUP BY 1`);
      await client.end();
      expect(rows.every((row: { n: number }) => row.n === 1)).toBe(true);
      expect(rows).toHaveLength(shipped.length + 1);
    } finally {
      await database.drop();
    }
  });
});

async function makeMigrationsDir(extras: { name: string; sql: string }[]): Promise<string> {
  const { mkdtempSync, mkdirSync, writeFileSync, cpSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-migrations-"));
  cpSync(defaultMigrationsDir, dir, { recursive: true });
  for (const { name, sql } of extras) {
    mkdirSync(path.join(dir, name));
    writeFileSync(path.join(dir, name, "migration.sql"), sql);
  }
  return dir;
}
