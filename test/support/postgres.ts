// Throw-away PostgreSQL databases for tests and benchmarks (no test-runner imports here).
import { randomBytes } from "node:crypto";
import pg from "pg";

/** Creates an empty database next to the admin URL's; returns its URL and a function that drops it. */
export async function createPostgresDatabaseAt(adminUrl: string, prefix = "dossier_test"): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
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
