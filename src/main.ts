// The server's composition root: configuration → database → events → run queue → app → HTTP
// server. It owns start-up failures and graceful shutdown: on SIGTERM/SIGINT it stops accepting
// connections, lets requests in flight finish, closes sockets, hands runs in flight back for
// another worker, then closes the queue, Redis and the database.
import { createApp } from "./app.js";
import { modelFor, openEvents, openMigratedDatabase, openRunQueue, mcpSettings, runtimeSettings, stopOnSignals } from "./compose.js";
import { ConfigError, loadConfig } from "./config.js";
import { DataDirLockedError } from "./db/data-dir-lock.js";
import { MigrationError } from "./db/migrate.js";
import { RedisUnavailableError } from "./events/redis-event-target.js";
import { createLogger } from "./logger.js";
import { startHttpServer } from "./server/http-server.js";

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  for (const warning of config.warnings) logger.warn(warning);

  const db = await openMigratedDatabase(config, logger);
  const redis = await openEvents(config, logger);
  const runQueue = await openRunQueue(config, logger);
  const app = createApp({
    db,
    events: redis.events,
    logger,
    authRequired: config.authRequired,
    corsOrigins: config.corsOrigins,
    metricsToken: config.metricsToken,
    agents: config.agents,
    traceSubscriberBuffer: config.traceSubscriberBuffer,
    mcp: mcpSettings(config, logger),
    limits: config.limits,
    runQueue,
    runtime: config.inProcessWorker ? runtimeSettings(config, modelFor(config, logger)) : undefined,
  });
  // Every agent profile whose definition changed since the last start becomes a new version now.
  await app.services.agentProfiles.load();
  if (!config.inProcessWorker) logger.info("IN_PROCESS_WORKER=false: this server executes no runs; start worker processes (npm run worker)");
  if (config.capabilities.commands.allowed) {
    logger.warn("COMMANDS_ALLOWED=true: runs may execute programs in their sandbox folders as this server's user");
  }
  if (!config.authRequired) {
    logger.warn("AUTH_REQUIRED=false: requests without an API key act as the development principal");
  }

  let server: Awaited<ReturnType<typeof startHttpServer>> | undefined;
  stopOnSignals(logger, async () => {
    await server?.close();
    await app.stop();
    await runQueue?.close();
    await redis.close();
    await db.close();
  });

  server = await startHttpServer({
    app,
    port: config.port,
    host: config.host,
    maxSubscriptionsPerConnection: config.maxSubscriptionsPerConnection,
  });
  logger.info(`Dossier is listening: GraphiQL at ${server.url}`, { url: server.url, port: server.port });
}

main().catch((error: unknown) => {
  // Expected start-up failures get their message alone; anything else its stack.
  const expected =
    error instanceof ConfigError ||
    error instanceof DataDirLockedError ||
    error instanceof MigrationError ||
    error instanceof RedisUnavailableError;
  process.stderr.write(`Dossier could not start.\n${expected ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
