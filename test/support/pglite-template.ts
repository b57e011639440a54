// Writes a migrated PGlite data directory (dumpDataDir, uncompressed) to the file named by its
// first argument, and the same database before any migration (just initialised) to the second;
// run by database-templates.ts in a process of its own.
//   node --import tsx test/support/pglite-template.ts <migrated file> <empty file>
import { writeFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { migrate } from "../../src/db/migrate.js";
import { pgliteSession } from "../../src/db/sql-session.js";

const [file, emptyFile] = process.argv.slice(2);
if (!file || !emptyFile) throw new Error("usage: pglite-template.ts <migrated file> <empty file>");
const pglite = await PGlite.create();
try {
  writeFileSync(emptyFile, Buffer.from(await (await pglite.dumpDataDir("none")).arrayBuffer()));
  await migrate(pgliteSession(pglite));
  await pglite.exec("ANALYZE");
  const dump = await pglite.dumpDataDir("none");
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
} finally {
  await pglite.close();
}
