// Creates a principal and prints its first API key, once: npm run key:create -- --name <name>
// (a running server can issue additional keys with createApiKey).
import { parseArgs } from "node:util";
import { createEventBus } from "../src/events/topics.js";
import { DomainError } from "../src/domain/errors.js";
import { PrincipalService, principalName } from "../src/domain/principal/principal-service.js";
import { encodeGlobalId } from "../src/graphql/global-id.js";
import { fail, withOperatorDatabase } from "./operator-database.js";

const { values } = parseArgs({ options: { name: { type: "string" } } });
if (!values.name) fail("usage: npm run key:create -- --name <name>");

// A name no principal may have is refused before the data folder is opened (or created).
let name = "";
try {
  name = principalName(values.name!);
} catch (error) {
  if (error instanceof DomainError) fail(error.message);
  throw error;
}

await withOperatorDatabase("or ask the running server for an additional key with the createApiKey mutation", async (db) => {
  const { principal, secret } = await new PrincipalService({ prisma: db.prisma, events: createEventBus() }).createPrincipal({ name });
  process.stdout.write(
    `Principal "${principal.name}" (${encodeGlobalId("Principal", principal.id)}) created.\n` +
      `API key — shown only now, store it safely:\n\n  ${secret}\n\n` +
      `Send it as: Authorization: Bearer ${secret}\n`,
  );
});
