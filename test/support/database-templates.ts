// Migrated templates, made once per test run: creating and migrating a database for every test
// app costs more than most tests (PGlite ~1.5 s: initdb and 25 migrations; PostgreSQL ~0.2 s,
// several times that under load). Each test database starts as a copy of a template instead:
// a PGlite dump (read once per test process, src/db/pglite-copy.ts) written into a new in-memory
// instance, a PostgreSQL `CREATE DATABASE … TEMPLATE` (which also holds pg-boss's empty schema).
// A test of the migrations themselves starts from an empty PGlite dump, which saves initdb
// (3.4–4.9 s each, measured on a busy machine). The migration runner still runs on every copy (and
// finds nothing to apply), so a copy is exactly what a fresh migrated database would be; the PGlite
// template was analysed after its migrations, so a copy is not analysed again before a write.
// No test-runner imports here.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import PgBoss from "pg-boss";
import { openDatabase } from "../../src/db/open-database.js";
import { projectFile } from "../../src/project-files.js";

export type DatabaseTemplates = {
  /** A file holding a migrated PGlite data directory (an uncompressed tar, pglite-template.ts). */
  pgliteDump: string;
  /** The same before any migration: initialised (initdb), as a new embedded database starts. */
  pgliteEmptyDump: string;
  /** The name of a migrated PostgreSQL database that nobody connects to, or null without PostgreSQL. */
  postgresTemplate: string | null;
  drop(): Promise<void>;
};

export async function createDatabaseTemplates(postgresAdminUrl: string | null): Promise<DatabaseTemplates> {
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-template-"));
  const pgliteDump = path.join(dir, "pglite.tar");
  const pgliteEmptyDump = path.join(dir, "pglite-empty.tar");
  // One after the other: PGlite's start blocks its process's event loop for seconds, long
  // enough for PostgreSQL to end a migration's transaction as idle.
  const postgresTemplate = postgresAdminUrl ? await createPostgresTemplate(postgresAdminUrl) : null;
  await dumpPglite(pgliteDump, pgliteEmptyDump);
  return {
    pgliteDump,
    pgliteEmptyDump,
    postgresTemplate,
    async drop() {
      rmSync(dir, { recursive: true, force: true });
      if (postgresAdminUrl && postgresTemplate) await dropPostgresDatabase(postgresAdminUrl, postgresTemplate);
    },
  };
}

/** In a child process: an embedded database holds ~800 MB, which the test runner need not keep. */
async function dumpPglite(file: string, emptyFile: string): Promise<void> {
  await promisify(execFile)(process.execPath, ["--import", "tsx", projectFile("test", "support", "pglite-template.ts"), file, emptyFile], {
    cwd: projectFile(),
  });
}

async function createPostgresTemplate(adminUrl: string): Promise<string> {
  const name = `dossier_template_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = await openDatabase({ kind: "postgres", url: url.toString() });
  try {
    await db.migrate();
  } finally {
    // Every session must be gone: PostgreSQL copies a template only while nobody is connected to it.
    await db.close();
  }
  // pg-boss's own schema, as the first server with webhooks or a run queue would create it: each
  // test's pg-boss then starts in a fraction of the time (its queues are still created by Dossier).
  const boss = new PgBoss({ connectionString: url.toString(), schema: "pgboss", schedule: false, supervise: false });
  await boss.start();
  await boss.stop({ graceful: false, wait: true });
  return name;
}

export async function dropPostgresDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
