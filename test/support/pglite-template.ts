// Writes a migrated PGlite data directory (dumpDataDir, uncompressed) to the file named by its
// argument; run by database-templates.ts in a process of its own.
//   node --import tsx test/support/pglite-template.ts <file>
import { writeFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { migrate } from "../../src/db/migrate.js";
import { pgliteSession } from "../../src/db/sql-session.js";

const file = process.argv[2];
if (!file) throw new Error("usage: pglite-template.ts <file>");
const pglite = await PGlite.create();
try {
  await migrate(pgliteSession(pglite));
  await pglite.exec("ANALYZE");
  const dump = await pglite.dumpDataDir("none");
  writeFileSync(file, Buffer.from(await dump.arrayBuffer()));
} finally {
  await pglite.close();
}
