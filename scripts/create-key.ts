// Creates a principal and prints its first API key, once: npm run key:create -- --name <name>
// It opens the database itself. The embedded database allows one process at a time, so there
// it runs while the server is stopped (a running server can issue keys with createApiKey).
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../src/config.js";
import { DataDirLockedError } from "../src/db/data-dir-lock.js";
import { openDatabase } from "../src/db/open-database.js";
import { PrincipalService } from "../src/domain/principal/principal-service.js";
import { ValidationError } from "../src/domain/errors.js";
import { encodeGlobalId } from "../src/graphql/global-id.js";

const fail = (message: string): never => {
  process.stderr.write(`${message}\n`);
  process.exit(1);
};

const { values } = parseArgs({ options: { name: { type: "string" } } });
if (!values.name) fail("usage: npm run key:create -- --name <name>");

try {
  const config = loadConfig();
  const db = await openDatabase(config.database).catch((error: unknown) => {
    if (error instanceof DataDirLockedError) {
      fail(
        `${error.message}\nThe embedded database is in use by a running Dossier server: stop it and run this again, ` +
          `or ask the running server for an additional key with the createApiKey mutation.`,
      );
    }
    throw error;
  });
  try {
    await db.migrate();
    const { principal, secret } = await new PrincipalService({ prisma: db.prisma }).createPrincipal({ name: values.name! });
    process.stdout.write(
      `Principal "${principal.name}" (${encodeGlobalId("Principal", principal.id)}) created.\n` +
        `API key — shown only now, store it safely:\n\n  ${secret}\n\n` +
        `Send it as: Authorization: Bearer ${secret}\n`,
    );
  } finally {
    await db.close();
  }
} catch (error) {
  if (error instanceof ConfigError || error instanceof ValidationError) fail(error.message);
  throw error;
}
