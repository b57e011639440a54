// Revokes an API key: npm run key:revoke -- <prefix> (the `prefix` that apiKeys shows, e.g.
// dsk_3f9a1c2b, or the whole key). Requests with it are refused from now on; subscriptions a
// running server holds open with it are closed within seconds (at once with REDIS_URL, which
// tells every instance; otherwise when the instances next check their open keys), and the
// schedules it created, last updated or resumed pause (one a fire holds at that moment pauses at
// its next fire).
import { openEvents } from "../src/compose/infrastructure.js";
import { NotFoundError } from "../src/domain/errors.js";
import { PrincipalService } from "../src/domain/principal/principal-service.js";
import { pauseSchedulesOnRevocation } from "../src/domain/schedules/revoked-keys.js";
import { createLogger, silentLogger } from "../src/logger.js";
import { fail, withOperatorDatabase } from "./operator-database.js";

const given = process.argv[2];
if (!given || process.argv.length > 3) fail("usage: npm run key:revoke -- <prefix>   (the prefix apiKeys shows, e.g. dsk_3f9a1c2b, or the whole key)");

await withOperatorDatabase("or revoke the key through the running server with the revokeApiKey mutation", async (db, config) => {
  const events = await openEvents(config, silentLogger);
  try {
    const key = await new PrincipalService({
      prisma: db.prisma,
      events: events.events,
      revoked: pauseSchedulesOnRevocation({ prisma: db.prisma, events: events.events, logger: createLogger("warn") }),
    })
      .revokeApiKeyByPrefix(given!)
      .catch((error: unknown) =>
        error instanceof NotFoundError
          ? fail(`No API key starts with ${given} (the prefix is the first 12 characters, as apiKeys shows it).`)
          : Promise.reject(error),
      );
    process.stdout.write(`Key "${key.name}" (${key.prefix}…) of principal "${key.principal.name}" is revoked since ${key.revokedAt!.toISOString()}.\n`);
  } finally {
    await events.close();
  }
});
