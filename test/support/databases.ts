// Test databases: an in-memory PGlite, or a fresh PostgreSQL database dropped afterwards; empty,
// or already migrated (a copy of the run's template, see database-templates.ts).
import { readFileSync } from "node:fs";
import { inject } from "vitest";
import { type Database, openDatabase } from "../../src/db/open-database.js";
import { type DataDirCopy, readDataDirCopy } from "../../src/db/pglite-copy.js";
import { createPostgresDatabaseAt } from "./postgres.js";

export type Backend = "pglite" | "postgres";

/** Every backend this run can test: PGlite always, PostgreSQL when reachable (always on CI). */
export const backends: Backend[] = inject("postgresAdminUrl") ? ["pglite", "postgres"] : ["pglite"];

export function postgresAdminUrl(): string {
  const url = inject("postgresAdminUrl");
  if (!url) throw new Error("PostgreSQL is not available in this run");
  return url;
}

/** Creates an empty PostgreSQL database; returns its URL and a function that drops it. */
export function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  return createPostgresDatabaseAt(postgresAdminUrl());
}

/** A migrated PostgreSQL database (a copy of the run's template); returns its URL and a function that drops it. */
export function createMigratedPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  return createPostgresDatabaseAt(postgresAdminUrl(), "dossier_test", inject("postgresTemplate") ?? undefined);
}

let pgliteTemplate: DataDirCopy | undefined;
let pgliteEmpty: DataDirCopy | undefined;

/** The run's migrated PGlite data directory, read once per test file. */
function pgliteTemplateDump(): DataDirCopy {
  // Analysed after its migrations (pglite-template.ts): a copy need not analyse again before a write.
  pgliteTemplate ??= readDataDirCopy(readFileSync(inject("pgliteTemplateDump")), { analysed: true });
  return pgliteTemplate;
}

/** The run's PGlite data directory before any migration (as initdb leaves it), read once per test file. */
function pgliteEmptyDump(): DataDirCopy {
  pgliteEmpty ??= readDataDirCopy(readFileSync(inject("pgliteEmptyDump")));
  return pgliteEmpty;
}

/**
 * A database of the given backend with every migration applied, as `openTestDatabase` followed by
 * `db.migrate()` gives, in a fraction of the time.
 */
export async function openMigratedTestDatabase(
  backend: Backend,
  { onQuery, poolSize, streamPoolSize }: { onQuery?: (sql: string, params: string) => void; poolSize?: number; streamPoolSize?: number } = {},
): Promise<{ db: Database; url?: string; dispose(): Promise<void> }> {
  if (backend === "pglite") {
    const db = await openDatabase({ kind: "pglite", loadDataDir: pgliteTemplateDump() }, { onQuery });
    return { db, dispose: () => db.close() };
  }
  const created = await createMigratedPostgresDatabase();
  const db = await openDatabase({ kind: "postgres", url: created.url, ...(poolSize && { poolSize }), streamPoolSize }, { onQuery });
  return {
    db,
    url: created.url,
    async dispose() {
      await db.close();
      await created.drop();
    },
  };
}

/** An empty, unmigrated database of the given backend; `onQuery` hears every SQL statement its Prisma client sends. */
export async function openTestDatabase(
  backend: Backend,
  { onQuery }: { onQuery?: (sql: string, params: string) => void } = {},
): Promise<{ db: Database; url?: string; dispose(): Promise<void> }> {
  if (backend === "pglite") {
    const db = await openDatabase({ kind: "pglite", loadDataDir: pgliteEmptyDump() }, { onQuery });
    return { db, dispose: () => db.close() };
  }
  const created = await createPostgresDatabase();
  const db = await openDatabase({ kind: "postgres", url: created.url }, { onQuery });
  return {
    db,
    url: created.url,
    async dispose() {
      await db.close();
      await created.drop();
    },
  };
}

/**
 * Makes `dir` a data folder as a server's first start leaves it (its embedded database migrated),
 * from the run's template: a server started on it opens the database instead of running initdb
 * and every migration first.
 */
export async function fillMigratedDataFolder(dir: string): Promise<void> {
  const db = await openDatabase({ kind: "pglite", dataDir: dir, loadDataDir: pgliteTemplateDump() });
  await db.close();
}

/**
 * A migrated database that outlives one app: open it, close it, open it again (server restarts).
 * PGlite keeps its files in a temporary folder; PostgreSQL gets a fresh database.
 */
export async function createPersistentTestDatabase(
  backend: Backend,
): Promise<{ open(): Promise<{ db: Database; dispose(): Promise<void> }>; drop(): Promise<void> }> {
  if (backend === "pglite") {
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const path = await import("node:path");
    const dataDir = mkdtempSync(path.join(tmpdir(), "dossier-data-"));
    let opened = false;
    return {
      async open() {
        // The first start copies the migrated template into the folder; later ones find it there.
        const loadDataDir = opened ? undefined : pgliteTemplateDump();
        opened = true;
        const db = await openDatabase({ kind: "pglite", dataDir, loadDataDir });
        return { db, dispose: () => db.close() };
      },
      async drop() {
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const created = await createMigratedPostgresDatabase();
  return {
    async open() {
      const db = await openDatabase({ kind: "postgres", url: created.url });
      return { db, dispose: () => db.close() };
    },
    drop: () => created.drop(),
  };
}
