// Applies pending migrations to the configured database and prints what it did
// (npm run db:migrate). The server does the same at start; this is for operators and CI.
import { loadConfig } from "../src/config.js";
import { readMigrations } from "../src/db/migrate.js";
import { openDatabase } from "../src/db/open-database.js";

const dirFlag = process.argv.indexOf("--migrations");
const migrations = dirFlag > 0 ? readMigrations(process.argv[dirFlag + 1]) : readMigrations();
const db = await openDatabase(loadConfig().database, { migrations });
try {
  console.log(JSON.stringify(await db.migrate()));
} finally {
  await db.close();
}
