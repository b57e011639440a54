// Applies prisma/migrations at start, on PGlite and PostgreSQL alike, keeping Prisma's own
// `_prisma_migrations` bookkeeping so `prisma migrate status` and later tooling agree with us.
//
// - Every runner takes the same advisory lock as Prisma Migrate, so concurrent starts (and a
//   concurrent `prisma migrate deploy`) apply each migration exactly once.
// - Each migration runs in one transaction together with its bookkeeping row: a crash or an
//   error leaves the database as it was before that migration.
// - A failure is recorded (logs + rolled_back_at) and stops the start; nothing after it runs.
// - A migration that was applied and then edited, or an unfinished row left by another tool,
//   stops the start with a message saying what to do.
import { createHash, randomUUID } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { projectFile } from "../project-files.js";
import type { SqlSession } from "./sql-session.js";

/** The key Prisma Migrate itself locks with (72707369), so both tools exclude each other. */
const ADVISORY_LOCK_KEY = 72707369;

export const defaultMigrationsDir = projectFile("prisma", "migrations");

export type Migration = { name: string; sql: string; checksum: string };
export type MigrationReport = { applied: string[]; alreadyApplied: string[]; unknownInDatabase: string[] };

type MigrationRow = {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
};

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MigrationError";
  }
}

export function readMigrations(dir: string = defaultMigrationsDir): Migration[] {
  if (!existsSync(dir)) throw new MigrationError(`The migrations folder ${dir} does not exist.`);
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(dir, entry.name, "migration.sql")))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const bytes = readFileSync(path.join(dir, name, "migration.sql"));
      return { name, sql: bytes.toString("utf8"), checksum: createHash("sha256").update(bytes).digest("hex") };
    });
}

const createBookkeeping = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id"                  VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum"            VARCHAR(64) NOT NULL,
  "finished_at"         TIMESTAMPTZ,
  "migration_name"      VARCHAR(255) NOT NULL,
  "logs"                TEXT,
  "rolled_back_at"      TIMESTAMPTZ,
  "started_at"          TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

/**
 * A migration's row once it is applied, in the transaction that applied it: started and finished
 * at that transaction's time, so a migration is either recorded finished or not at all.
 */
const recordApplied = `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
  VALUES ($1, $2, $3, now(), now(), 1)`;

/**
 * What brings a new, empty database to every migration in `migrations`, as transactions of
 * statements (one with parameters is one statement; one without may hold several): the
 * bookkeeping table, then per migration its SQL and its finished row, as `migrate` leaves them.
 * A new embedded folder is migrated so where it is initialised (pglite-initdb.ts); what fails
 * there is left to `migrate`, which applies the rest one by one and records the failure.
 */
export function newDatabaseSteps(migrations: Migration[]): { sql: string; params?: string[] }[][] {
  return [
    [{ sql: createBookkeeping }],
    ...migrations.map((migration) => [{ sql: migration.sql }, { sql: recordApplied, params: [randomUUID(), migration.checksum, migration.name] }]),
  ];
}

async function appliedRows(session: SqlSession): Promise<MigrationRow[]> {
  return session.query<MigrationRow>(
    `SELECT migration_name, checksum, finished_at, rolled_back_at
       FROM "_prisma_migrations" WHERE rolled_back_at IS NULL ORDER BY started_at`,
  );
}

async function applyOne(session: SqlSession, migration: Migration): Promise<void> {
  const id = randomUUID();
  try {
    await session.exec("BEGIN");
    await session.exec(migration.sql);
    await session.query(recordApplied, [id, migration.checksum, migration.name]);
    await session.exec("COMMIT");
  } catch (error) {
    await session.exec("ROLLBACK").catch(() => undefined);
    const reason = error instanceof Error ? error.message : String(error);
    // The transaction rolled the migration back entirely; record the attempt as such.
    await session.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, logs, started_at, rolled_back_at)
       VALUES ($1, $2, $3, $4, now(), now())`,
      [id, migration.checksum, migration.name, reason],
    );
    throw new MigrationError(`Migration ${migration.name} failed and was rolled back; no later migration was applied.\n  ${reason}`);
  }
}

export async function migrate(session: SqlSession, { migrations = readMigrations() }: { migrations?: Migration[] } = {}): Promise<MigrationReport> {
  await session.query("SELECT pg_advisory_lock($1)", [ADVISORY_LOCK_KEY]);
  try {
    await session.exec(createBookkeeping);
    const rows = await appliedRows(session);
    const unfinished = rows.find((row) => row.finished_at === null);
    if (unfinished) {
      throw new MigrationError(
        `Migration ${unfinished.migration_name} was started but never finished (see "_prisma_migrations"). ` +
          `Repair the database, then mark the row rolled back (set rolled_back_at) or finished before starting again.`,
      );
    }
    const byName = new Map(rows.map((row) => [row.migration_name, row]));
    const report: MigrationReport = { applied: [], alreadyApplied: [], unknownInDatabase: [] };
    for (const migration of migrations) {
      const row = byName.get(migration.name);
      if (row && row.checksum !== migration.checksum) {
        throw new MigrationError(
          `Migration ${migration.name} was changed after it was applied (checksum differs). ` +
            `Restore its original migration.sql and put the change in a new migration.`,
        );
      }
      if (row) {
        report.alreadyApplied.push(migration.name);
        continue;
      }
      await applyOne(session, migration);
      report.applied.push(migration.name);
    }
    const known = new Set(migrations.map((migration) => migration.name));
    report.unknownInDatabase = rows.map((row) => row.migration_name).filter((name) => !known.has(name));
    return report;
  } finally {
    await session.query("SELECT pg_advisory_unlock($1)", [ADVISORY_LOCK_KEY]);
  }
}

/** Names of migrations on disk that the database has not finished applying. */
export async function pendingMigrations(session: SqlSession, migrations: Migration[] = readMigrations()): Promise<string[]> {
  const [table] = await session.query<{ exists: boolean }>(`SELECT to_regclass('"_prisma_migrations"') IS NOT NULL AS exists`);
  if (!table?.exists) return migrations.map((migration) => migration.name);
  const done = new Set((await appliedRows(session)).filter((row) => row.finished_at !== null).map((row) => row.migration_name));
  return migrations.map((migration) => migration.name).filter((name) => !done.has(name));
}
