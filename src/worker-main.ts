// `npm run worker`: the worker process's entry point (its composition root is
// compose/worker-process.ts). It needs DATABASE_URL (REDIS_URL is optional and makes cancellations
// immediate across processes) and the same model settings as the server. SIGTERM or SIGINT stops
// it gracefully: runs in flight are handed back.
import { stopOnSignals } from "./compose/infrastructure.js";
import { keepServingOnUnhandledRejections } from "./compose/unhandled-rejections.js";
import { ConfigError, loadConfig } from "./config.js";
import { MigrationError } from "./db/migrate.js";
import { RedisUnavailableError } from "./events/redis-event-target.js";
import { createLogger } from "./logger.js";
import { startWorkerProcess, type WorkerProcess, WorkerNeedsPostgresError } from "./compose/worker-process.js";

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  for (const warning of config.warnings) logger.warn(warning);
  const rejections = keepServingOnUnhandledRejections(logger);
  let worker: WorkerProcess | undefined;
  stopOnSignals(logger, config.shutdownTimeoutMs, async (step) => {
    await worker?.stop(step);
  });
  worker = await startWorkerProcess({ config, logger });
  rejections.countInto(worker.metrics);
}

main().catch((error: unknown) => {
  const expected =
    error instanceof ConfigError || error instanceof MigrationError || error instanceof RedisUnavailableError || error instanceof WorkerNeedsPostgresError;
  process.stderr.write(`Dossier's worker could not start.\n${expected ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
