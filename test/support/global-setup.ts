// Decides once per test run whether the PostgreSQL variants run. On CI (CI=true) PostgreSQL
// is required: its absence fails the run instead of silently skipping those tests.
import pg from "pg";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    postgresAdminUrl: string | null;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const url = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    project.provide("postgresAdminUrl", url);
  } catch (error) {
    if (process.env.CI === "true") {
      throw new Error(`CI=true requires PostgreSQL at ${url}, but it is unreachable: ${String(error)}`);
    }
    console.warn(`\n  PostgreSQL at ${url} is unreachable: the PostgreSQL variants of the tests are skipped.\n`);
    project.provide("postgresAdminUrl", null);
  } finally {
    await client.end().catch(() => undefined);
  }
}
