// Decides once per test run whether the PostgreSQL variants run. On CI (CI=true) PostgreSQL
// is required: its absence fails the run instead of silently skipping those tests.
import { Redis } from "ioredis";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { buildDossier } from "../../scripts/build.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    postgresAdminUrl: string | null;
    redisUrl: string | null;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  // The processes tests start as an operator would run them (dist/, see test/support/processes.ts).
  await buildDossier();
  await checkPostgres(project);
  await checkRedis(project);
}

/** Redis, for the tests of fan-out across instances; required on CI like PostgreSQL. */
async function checkRedis(project: TestProject): Promise<void> {
  const url = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await client.connect();
    await client.ping();
    project.provide("redisUrl", url);
  } catch (error) {
    if (process.env.CI === "true") throw new Error(`CI=true requires Redis at ${url}, but it is unreachable: ${String(error)}`);
    console.warn(`\n  Redis at ${url} is unreachable: the tests of several instances are skipped.\n`);
    project.provide("redisUrl", null);
  } finally {
    client.disconnect();
  }
}

async function checkPostgres(project: TestProject): Promise<void> {
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
