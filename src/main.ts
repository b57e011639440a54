// The composition root: configuration → database → events → app → HTTP server.
// It alone chooses concrete adapters, and it owns start-up failures and graceful shutdown.
import { createApp } from "./app.js";
import { ConfigError, loadConfig } from "./config.js";
import { DataDirLockedError } from "./db/data-dir-lock.js";
import { MigrationError } from "./db/migrate.js";
import { openDatabase } from "./db/open-database.js";
import { createRedisEventBus, RedisUnavailableError } from "./events/redis-event-target.js";
import { createEventBus } from "./events/topics.js";
import { createLogger } from "./logger.js";
import { OpenAIModel } from "./runtime/adapters/openai-model.js";
import { createDemoModel } from "./runtime/testing/scripted-model.js";
import { startHttpServer } from "./server/http-server.js";

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);

  const db = await openDatabase(config.database);
  const migrations = await db.migrate().catch(async (error: unknown) => {
    await db.close();
    throw error;
  });
  logger.info("database ready", {
    database: config.database.kind === "postgres" ? "postgresql" : `pglite (${config.database.dataDir})`,
    appliedMigrations: migrations.applied,
  });
  if (migrations.unknownInDatabase.length > 0) {
    logger.warn("the database has migrations this version does not know; is an older Dossier running?", {
      migrations: migrations.unknownInDatabase,
    });
  }

  const redis = config.redisUrl ? await createRedisEventBus(config.redisUrl) : undefined;
  const events = redis?.events ?? createEventBus();
  logger.info(redis ? "events fan out through Redis" : "events stay in this process (no REDIS_URL)");
  const model =
    config.model.kind === "openai"
      ? new OpenAIModel({
          apiKey: config.model.apiKey,
          baseURL: config.model.baseURL,
          model: config.model.model,
          contextWindow: config.model.contextWindow,
        })
      : createDemoModel();
  if (model.scripted) {
    logger.warn("OPENAI_API_KEY is not set: runs are answered by the scripted offline demo model", { model: model.label });
  }
  const app = createApp({
    db,
    events,
    logger,
    authRequired: config.authRequired,
    agents: config.agents,
    traceSubscriberBuffer: config.traceSubscriberBuffer,
    mcp: { stdioAllowed: config.capabilities.mcpStdioAllowed, drainTimeoutMs: config.capabilities.mcpDrainTimeoutMs },
    runtime: config.inProcessWorker
      ? {
          model,
          sandboxDir: config.sandboxDir,
          toolTimeoutMs: config.toolTimeoutMs,
          otlpEndpoint: config.otlpEndpoint,
          compactionPolicies: config.compactionPolicies,
          fetch: config.capabilities.fetch,
          commands: config.capabilities.commands.allowed ? config.capabilities.commands : undefined,
          spill: config.spill,
        }
      : undefined,
  });
  if (config.capabilities.commands.allowed) {
    logger.warn("COMMANDS_ALLOWED=true: runs may execute programs in their sandbox folders as this server's user");
  }
  if (!config.authRequired) {
    logger.warn("AUTH_REQUIRED=false: requests without an API key act as the development principal");
  }

  // Installed before the server announces itself, so a signal sent by whoever waits for that
  // announcement is always handled.
  let server: Awaited<ReturnType<typeof startHttpServer>> | undefined;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info("shutting down", { signal });
    try {
      await server?.close();
      await app.stop();
      await redis?.close();
      await db.close();
      process.exit(0);
    } catch (error) {
      logger.error("shutdown failed", { error: String(error) });
      process.exit(1);
    }
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));

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
