// `npm start`: the server process's entry point (its composition root is compose/server.ts). It
// owns start-up failures: expected ones are reported by their message alone.
import { startServer } from "./compose/server.js";
import { keepServingOnUnhandledRejections } from "./compose/unhandled-rejections.js";
import { ConfigError, loadConfig } from "./config.js";
import { DataDirLockedError } from "./db/data-dir-lock.js";
import { MigrationError } from "./db/migrate.js";
import { RedisUnavailableError } from "./events/redis-event-target.js";
import { createLogger } from "./logger.js";

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  for (const warning of config.warnings) logger.warn(warning);
  const rejections = keepServingOnUnhandledRejections(logger);
  const { metrics } = await startServer({ config, logger });
  rejections.countInto(metrics);
}

main().catch((error: unknown) => {
  // Expected start-up failures get their message alone; anything else its stack.
  const expected =
    error instanceof ConfigError || error instanceof DataDirLockedError || error instanceof MigrationError || error instanceof RedisUnavailableError;
  const inUse = (error as { code?: unknown; port?: unknown } | null)?.code === "EADDRINUSE";
  if (inUse) {
    process.stderr.write(`Dossier could not start: port ${(error as { port: number }).port} is in use (another server?); stop it or set PORT.\n`);
    process.exit(1);
  }
  process.stderr.write(`Dossier could not start.\n${expected ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
