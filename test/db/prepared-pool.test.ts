// pg-boss's statements go through a pool of Dossier's that names them (prepared-pool.ts): a run's
// job insert, the workers' fetches and completions are parsed and planned once per connection, as
// Dossier's own statements are, and its scripts of several statements still run.
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { type PreparedPool, preparedPool } from "../../src/db/prepared-pool.js";
import { silentLogger } from "../../src/logger.js";
import { PgBossRunQueue } from "../../src/runtime/adapters/pg-boss-queue.js";
import { backends, createMigratedPostgresDatabase, createPostgresDatabase } from "../support/databases.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** What the pool's one connection has prepared, and how often each ran. */
const preparedOn = async (db: PreparedPool) =>
  (await db.executeSql("SELECT statement, (generic_plans + custom_plans)::int AS executions FROM pg_prepared_statements ORDER BY statement"))!.rows.filter(
    ({ statement }) => !statement.includes("pg_prepared_statements"),
  ) as { statement: string; executions: number }[];

describe.runIf(backends.includes("postgres"))("a pool that prepares pg-boss's statements", () => {
  it("prepares a statement once on its connection, and runs a script of several statements unnamed", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    const db = preparedPool(pg, { connectionString: database.url, max: 1 }, () => undefined);
    cleanups.push(db.close);
    const read = "SELECT $1::int + 1 AS next";
    for (const n of [1, 2, 3]) expect((await db.executeSql(read, [n]))?.rows).toEqual([{ next: n + 1 }]);
    await db.executeSql("BEGIN; CREATE TABLE job_note (id int); INSERT INTO job_note VALUES (7); COMMIT");
    expect((await db.executeSql("SELECT id FROM job_note"))?.rows).toEqual([{ id: 7 }]);
    expect(await preparedOn(db)).toEqual([
      { statement: "SELECT $1::int + 1 AS next", executions: 3 },
      { statement: "SELECT id FROM job_note", executions: 1 },
    ]);
  });

  it("drops a statement sent once it is closed, as pg-boss's own pool does (pg-boss completes a job without waiting)", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(database.drop);
    const db = preparedPool(pg, { connectionString: database.url, max: 1 }, () => undefined);
    expect((await db.executeSql("SELECT 1 AS one"))?.rows).toEqual([{ one: 1 }]);
    await db.close();
    await expect(db.executeSql("SELECT 1 AS one")).resolves.toBeUndefined();
  });

  it("carries the run queue's job inserts, fetches and completions", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(database.drop);
    const queue = await PgBossRunQueue.start({ url: database.url, logger: silentLogger, max: 1, listen: false });
    cleanups.push(() => queue.close());
    for (const runId of ["run-a", "run-b", "run-c"]) {
      await queue.enqueue([runId]);
      const [delivery] = await queue.take(1);
      expect(delivery?.runId).toBe(runId);
      await delivery!.done();
    }
    const prepared = await preparedOn((queue as unknown as { db: PreparedPool }).db);
    const executionsOf = (pattern: RegExp) => prepared.filter(({ statement }) => pattern.test(statement)).map(({ executions }) => executions);
    expect(executionsOf(/INSERT INTO pgboss\.job/)).toEqual([3]);
    expect(executionsOf(/^\s*WITH next/)).toEqual([3]);
    expect(executionsOf(/state = 'completed'/)).toEqual([3]);
  });
});
