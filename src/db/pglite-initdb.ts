// A new embedded data folder is initialised (PostgreSQL's initdb) and migrated in a short-lived
// child process. PGlite's initdb runs a second PostgreSQL and copies its whole folder through
// memory: about 760 MB at its peak, and what the process's allocator keeps of it stays resident
// for the server's life (a fresh `npm start` held about 90 MB more than a restart on the same
// folder). The migrations' DDL touches PGlite's memory and code that a running server never needs
// again, and PGlite's memory never shrinks (a fresh start held about 4 MB more than a restart).
// A child returns all of it to the system when it exits.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { type Migration, type MigrationReport, newDatabaseSteps } from "./migrate.js";

/**
 * The child: opens the folder with PGlite (which initialises it), runs the transactions it reads
 * from its standard input until one fails, prints how many were committed, and closes the folder.
 * CommonJS, so it needs no loader.
 */
const CHILD = `
const [pglite, dir] = process.argv.slice(1);
const { PGlite } = require(pglite);
const chunks = [];
process.stdin.on("data", (chunk) => chunks.push(chunk)).on("end", async () => {
  try {
    const { params, transactions } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const pg = await PGlite.create(dir, { startParams: [...PGlite.defaultStartParams, ...params] });
    let committed = 0;
    try {
      for (const steps of transactions) {
        await pg.transaction(async (tx) => {
          for (const step of steps) await (step.params ? tx.query(step.sql, step.params) : tx.exec(step.sql));
        });
        committed++;
      }
    } catch {}
    process.stdout.write(String(committed));
    await pg.close();
  } catch (error) {
    process.stderr.write(String((error && error.stack) || error));
    process.exit(1);
  }
});
`;

/**
 * Initialises the PGlite folder `pgDir` in a child process unless it holds a database already,
 * and applies `migrations` there: returns the names of those applied (none for an existing folder;
 * those that failed or come after a failure are left to the server's own `migrate`).
 */
export async function initialiseInChild(pgDir: string, startParams: string[], migrations: Migration[] = []): Promise<string[]> {
  if (existsSync(path.join(pgDir, "PG_VERSION"))) return [];
  const pglite = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  const committed = await new Promise<number>((resolve, reject) => {
    // --liftoff-only: compiled once, without optimisation (as the server runs; see scripts/build.mjs), PGlite's code is ready seconds sooner.
    const child = execFile(process.execPath, ["--liftoff-only", "-e", CHILD, pglite, pgDir], { maxBuffer: 16 * 2 ** 20 }, (error, stdout, stderr) =>
      error ? reject(new Error(`initialising the embedded database in ${pgDir} failed: ${stderr || error.message}`)) : resolve(Number(stdout) || 0),
    );
    child.stdin?.end(JSON.stringify({ params: startParams, transactions: newDatabaseSteps(migrations) }));
  });
  // The first transaction creates the bookkeeping table; each after it applies one migration.
  return migrations.slice(0, Math.max(0, committed - 1)).map((migration) => migration.name);
}

/** `report` of the server's first `migrate`, counting those applied in the child (`inChild`) as applied. */
export function countingChild(report: MigrationReport, inChild: string[]): MigrationReport {
  const applied = new Set(inChild);
  return {
    ...report,
    applied: [...report.alreadyApplied.filter((name) => applied.has(name)), ...report.applied],
    alreadyApplied: report.alreadyApplied.filter((name) => !applied.has(name)),
  };
}
