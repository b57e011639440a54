// A new embedded data folder is initialised (PostgreSQL's initdb) in a short-lived child process.
// PGlite's initdb runs a second PostgreSQL and copies its whole folder through memory: about
// 760 MB at its peak, and what the process's allocator keeps of it stays resident for the
// server's life (a fresh `npm start` held about 90 MB more than a restart on the same folder).
// A child returns all of it to the system when it exits.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/** The child: opens the folder with PGlite (which initialises it) and closes it. CommonJS, so it needs no loader. */
const CHILD = `
const [pglite, dir, params] = process.argv.slice(1);
const { PGlite } = require(pglite);
PGlite.create(dir, { startParams: [...PGlite.defaultStartParams, ...JSON.parse(params)] })
  .then((pg) => pg.close())
  .catch((error) => { process.stderr.write(String(error && error.stack || error)); process.exit(1); });
`;

/** Initialises the PGlite folder `pgDir` in a child process unless it holds a database already. */
export async function initialiseInChild(pgDir: string, startParams: string[]): Promise<void> {
  if (existsSync(path.join(pgDir, "PG_VERSION"))) return;
  const pglite = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  await new Promise<void>((resolve, reject) => {
    // --liftoff-only: compiled once, without optimisation (as the server runs; see scripts/build.mjs), PGlite's code is ready seconds sooner.
    execFile(
      process.execPath,
      ["--liftoff-only", "-e", CHILD, pglite, pgDir, JSON.stringify(startParams)],
      { maxBuffer: 16 * 2 ** 20 },
      (error, _stdout, stderr) => (error ? reject(new Error(`initialising the embedded database in ${pgDir} failed: ${stderr || error.message}`)) : resolve()),
    );
  });
}
