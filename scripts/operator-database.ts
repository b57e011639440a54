// What the operator's key scripts share: the configured database, opened and migrated by the
// script itself, with a plain message instead of a stack trace for what an operator can fix.
// The embedded database allows one process at a time, so there they run while the server is
// stopped (a running server does the same through the API).
import { type ParseArgsConfig, parseArgs } from "node:util";
import { ConfigError, type Config, loadConfig } from "../src/config.js";
import { DataDirLockedError } from "../src/db/data-dir-lock.js";
import { type Database, openDatabase } from "../src/db/open-database.js";
import { DomainError } from "../src/domain/errors.js";

export const fail = (message: string): never => {
  process.stderr.write(`${message}\n`);
  process.exit(1);
};

/**
 * The command line's options, or a message and exit 1 for what parseArgs refuses (an unknown
 * option, a value that looks like an option): a negative amount reads `--input=-1`.
 */
export function parsedArgs<T extends ParseArgsConfig>(config: T, usage?: string): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return fail(usage ? `${message}\n${usage}` : message);
  }
}

/** Runs `work` on the migrated database; `whileRunning` tells what to do instead when the server holds it. */
export async function withOperatorDatabase(whileRunning: string, work: (db: Database, config: Config) => Promise<void>): Promise<void> {
  try {
    const config = loadConfig();
    const db = await openDatabase(config.database).catch((error: unknown) => {
      if (error instanceof DataDirLockedError)
        fail(`${error.message}\nThe embedded database is in use by a running Dossier server: stop it and run this again, ${whileRunning}.`);
      throw error;
    });
    try {
      await db.migrate();
      await work(db, config);
    } finally {
      await db.close();
    }
  } catch (error) {
    if (error instanceof ConfigError || error instanceof DomainError) fail(error.message);
    throw error;
  }
}
