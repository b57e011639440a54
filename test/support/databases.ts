// Test databases: an in-memory PGlite, or a fresh PostgreSQL database dropped afterwards.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { type Database, openDatabase } from "../../src/db/open-database.js";

export type Backend = "pglite" | "postgres";

/** Every backend this run can test: PGlite always, PostgreSQL when reachable (always on CI). */
export const backends: Backend[] = inject("postgresAdminUrl") ? ["pglite", "postgres"] : ["pglite"];

export function postgresAdminUrl(): string {
  const url = inject("postgresAdminUrl");
  if (!url) throw new Error("PostgreSQL is not available in this run");
  return url;
}

/** Creates an empty PostgreSQL database; returns its URL and a function that drops it. */
export async function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = postgresAdminUrl();
  const name = `dossier_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** An empty, unmigrated database of the given backend. */
export async function openTestDatabase(backend: Backend): Promise<{ db: Database; url?: string; dispose(): Promise<void> }> {
  if (backend === "pglite") {
    const db = await openDatabase({ kind: "pglite" });
    return { db, dispose: () => db.close() };
  }
  const created = await createPostgresDatabase();
  const db = await openDatabase({ kind: "postgres", url: created.url });
  return {
    db,
    url: created.url,
    async dispose() {
      await db.close();
      await created.drop();
    },
  };
}
