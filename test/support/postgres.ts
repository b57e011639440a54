// Throw-away PostgreSQL databases for tests and benchmarks (no test-runner imports here).
import { randomBytes } from "node:crypto";
import pg from "pg";

/**
 * Creates a database next to the admin URL's, empty or a copy of `template` (a database nobody
 * is connected to); returns its URL and a function that drops it.
 */
export async function createPostgresDatabaseAt(adminUrl: string, prefix = "dossier_test", template?: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
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
