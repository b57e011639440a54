// Decides once per test run whether the PostgreSQL variants run. On CI (CI=true) PostgreSQL
// is required: its absence fails the run instead of silently skipping those tests.
import { Redis } from "ioredis";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { buildDossier, PROCESSES } from "../../scripts/build.mjs";
import { TEST_PROCESSES } from "./processes.js";
import { createDatabaseTemplates, type DatabaseTemplates } from "./database-templates.js";

declare module "vitest" {
  export interface ProvidedContext {
    postgresAdminUrl: string | null;
    redisUrl: string | null;
    /** See test/support/database-templates.ts. */
    pgliteTemplateDump: string;
    pgliteEmptyDump: string;
    postgresTemplate: string | null;
  }
}

type RunSetup = { postgresAdminUrl: string | null; redisUrl: string | null; templates: DatabaseTemplates };

// Vitest calls this once per project (the root and each of vitest.config.ts's projects), each loading this module
// anew: the work is done once per process, and undone after the last project's teardown.
const run = globalThis as { dossierTestSetup?: Promise<RunSetup>; dossierTestSetupUsers?: number };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  run.dossierTestSetup ??= setUpRun();
  run.dossierTestSetupUsers = (run.dossierTestSetupUsers ?? 0) + 1;
  const { postgresAdminUrl, redisUrl, templates } = await run.dossierTestSetup;
  project.provide("postgresAdminUrl", postgresAdminUrl);
  project.provide("redisUrl", redisUrl);
  project.provide("pgliteTemplateDump", templates.pgliteDump);
  project.provide("pgliteEmptyDump", templates.pgliteEmptyDump);
  project.provide("postgresTemplate", templates.postgresTemplate);
  return async () => {
    run.dossierTestSetupUsers = (run.dossierTestSetupUsers ?? 1) - 1;
    if (run.dossierTestSetupUsers > 0) return;
    run.dossierTestSetup = undefined;
    await templates.drop();
  };
}

async function setUpRun(): Promise<RunSetup> {
  // The processes tests start as an operator would run them (dist/, see test/support/processes.ts),
  // and the test processes they start many times over.
  await buildDossier([...PROCESSES, ...TEST_PROCESSES]);
  const postgresAdminUrl = await checkPostgres();
  const redisUrl = await checkRedis();
  return { postgresAdminUrl, redisUrl, templates: await createDatabaseTemplates(postgresAdminUrl) };
}

/** Redis, for the tests of fan-out across instances; required on CI like PostgreSQL. */
async function checkRedis(): Promise<string | null> {
  const url = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await client.connect();
    await client.ping();
    return url;
  } catch (error) {
    if (process.env.CI === "true") throw new Error(`CI=true requires Redis at ${url}, but it is unreachable: ${String(error)}`);
    console.warn(`\n  Redis at ${url} is unreachable: the tests of several instances are skipped.\n`);
    return null;
  } finally {
    client.disconnect();
  }
}

async function checkPostgres(): Promise<string | null> {
  const url = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return url;
  } catch (error) {
    if (process.env.CI === "true") {
      throw new Error(`CI=true requires PostgreSQL at ${url}, but it is unreachable: ${String(error)}`);
    }
    console.warn(`\n  PostgreSQL at ${url} is unreachable: the PostgreSQL variants of the tests are skipped.\n`);
    return null;
  } finally {
    await client.end().catch(() => undefined);
  }
}
