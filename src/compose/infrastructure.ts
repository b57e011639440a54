// What both processes (the server, server.ts, and the worker process, worker-process.ts) open in
// the same way from configuration: the database, the event bus, the run queue, the model and the
// secrets key. Only the composition roots choose concrete adapters.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Config } from "../config.js";
import { setOperatorPrices } from "../domain/costs/price-entries.js";
import { readModelPrices } from "./price-file.js";
import { newSecretsKey, SecretBox } from "../domain/secret-box.js";
import { type Database, openDatabase } from "../db/open-database.js";
import { createRedisEventBus } from "../events/redis-event-target.js";
import { createEventBus, type EventBus } from "../events/topics.js";
import type { Logger } from "../logger.js";
import { PgBossRunQueue } from "../runtime/adapters/pg-boss-queue.js";
import { tiktokenTokenizer } from "../runtime/adapters/tiktoken-tokenizer.js";
import { containmentNote, containmentOnThisServer } from "../runtime/tools/command-containment.js";
import type { ModelPort } from "../runtime/ports/model.js";
import { createDemoModel } from "../runtime/adapters/demo-model.js";
import { FallbackTokenBuckets, InProcessTokenBuckets, type RateLimitSettings, type TokenBuckets } from "../server/rate-limit.js";
import { RedisTokenBuckets } from "../server/redis-token-buckets.js";

/** Opens and migrates the configured database. */
export async function openMigratedDatabase(config: Config, logger: Logger): Promise<Database> {
  // A price file that cannot be used stops the start before the database is opened.
  const prices = config.modelPricesFile ? readModelPrices(config.modelPricesFile) : [];
  const db = await openDatabase(config.database);
  const migrations = await db.migrate().catch(async (error: unknown) => {
    await db.close();
    throw error;
  });
  logger.info("database ready", {
    database: config.database.kind === "postgres" ? "postgresql" : `pglite (${config.database.dataDir})`,
    appliedMigrations: migrations.applied,
  });
  if (prices.length > 0) {
    await setOperatorPrices(db.prisma, prices, new Date());
    logger.info("model prices set", { entries: prices.length });
  }
  if (migrations.unknownInDatabase.length > 0) {
    logger.warn("the database has migrations this version does not know; is an older Dossier running?", {
      migrations: migrations.unknownInDatabase,
    });
  }
  return db;
}

/**
 * The key MCP secrets are sealed with: SECRETS_KEY, or on the embedded default a key file in the
 * data folder, created on first start readable by its owner only. PostgreSQL without SECRETS_KEY
 * has none: secret values are refused there rather than kept in a key file on one instance.
 */
export function openSecrets(config: Config, logger: Logger): SecretBox | undefined {
  if (config.secretsKey) return new SecretBox(Buffer.from(config.secretsKey, "base64"));
  if (config.database.kind !== "pglite") {
    logger.warn("SECRETS_KEY is not set: MCP servers cannot be given header or environment values");
    return undefined;
  }
  const file = path.join(config.database.dataDir, "secrets.key");
  mkdirSync(config.database.dataDir, { recursive: true });
  try {
    writeFileSync(file, newSecretsKey(), { flag: "wx", mode: 0o600 });
    logger.info("created the secrets key file", { file });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  return new SecretBox(Buffer.from(readFileSync(file, "utf8").trim(), "base64"));
}

/** What principals' MCP servers may do on this instance, as the operator configured it. */
export function mcpSettings(config: Config, logger: Logger) {
  const { mcpStdioCommands, mcpStdioEnv, mcpHttpAllowedHosts, mcpDrainTimeoutMs, mcpIdleCloseMs, mcpLimits } = config.capabilities;
  return {
    stdioCommands: mcpStdioCommands,
    stdioEnv: mcpStdioEnv,
    httpAllowedHosts: mcpHttpAllowedHosts,
    secrets: openSecrets(config, logger),
    drainTimeoutMs: mcpDrainTimeoutMs,
    idleCloseMs: mcpIdleCloseMs,
    limits: mcpLimits,
  };
}

/** Redis when REDIS_URL is set (events reach every instance), otherwise this process only. */
export async function openEvents(config: Config, logger: Logger): Promise<{ events: EventBus; close(): Promise<void> }> {
  const redis = config.redisUrl ? await createRedisEventBus(config.redisUrl, config.redisPrefix, { logger }) : undefined;
  logger.info(redis ? "events fan out through Redis" : "events stay in this process (no REDIS_URL)");
  return redis ?? { events: createEventBus(), close: async () => undefined };
}

/**
 * The run queue of PostgreSQL deployments: ready runs are announced on it and workers wake for
 * them through it. The embedded database has none: the event bus announces runs to its one process.
 */
export async function openRunQueue(config: Config, logger: Logger): Promise<PgBossRunQueue | undefined> {
  if (config.database.kind !== "postgres") return undefined;
  const queue = await PgBossRunQueue.start({ url: config.database.url, logger, timeouts: config.database.timeouts });
  logger.info("runs are announced on the PostgreSQL job queue (pg-boss)");
  return queue;
}

/**
 * The configured model, or the scripted offline demo model without an API key. The OpenAI
 * adapter (and the openai package, about 2 MB of heap) is loaded only when it is configured.
 */
export async function modelFor(config: Config, logger: Logger): Promise<ModelPort> {
  if (config.model.kind === "openai") {
    const model = new (await import("../runtime/adapters/openai-model.js")).OpenAIModel({
      apiKey: config.model.apiKey,
      baseURL: config.model.baseURL,
      model: config.model.model,
      contextWindow: config.model.contextWindow,
      maxConcurrency: config.model.maxConcurrency,
      idleTimeoutMs: config.model.idleTimeoutMs,
      maxReplyBytes: config.model.maxReplyBytes,
    });
    // Only a process that runs attempts asks for a model: what the SDK loads on its first request
    // loads now, in the background, rather than in the first run's dispatch.
    void model.warm().catch((error: unknown) => logger.warn("the model client could not be warmed up", { error: String(error) }));
    return model;
  }
  const model = createDemoModel();
  if (model.scripted) {
    logger.warn("OPENAI_API_KEY is not set: runs are answered by the scripted offline demo model", { model: model.label });
  }
  return model;
}

/** The infrastructure a process runs on, opened in order; `close` closes it in reverse. */
export type Infrastructure = {
  db: Database;
  events: EventBus;
  runQueue?: PgBossRunQueue;
  close(step?: StopStep): Promise<void>;
};

export async function openInfrastructure(config: Config, logger: Logger): Promise<Infrastructure> {
  const db = await openMigratedDatabase(config, logger);
  const redis = await openEvents(config, logger);
  const runQueue = await openRunQueue(config, logger);
  return {
    db,
    events: redis.events,
    runQueue,
    async close(step = unnamed) {
      await step("the run queue", async () => runQueue?.close());
      await step("the event bus (Redis)", () => redis.close());
      await step("the database", () => db.close());
    },
  };
}

/** The runtime settings of the configuration (the in-process worker and worker processes alike). */
export function runtimeSettings(config: Config, model: ModelPort) {
  return {
    model,
    sandboxDir: config.sandboxDir,
    sandbox: config.sandbox,
    toolTimeoutMs: config.toolTimeoutMs,
    toolCallLimits: config.toolCallLimits,
    approvals: config.toolApprovals,
    dailyCostLimit: config.dailyCostLimit,
    otlpEndpoint: config.otlpEndpoint,
    maxTraceRecords: config.maxTraceRecords,
    compactionPolicies: config.compactionPolicies,
    contextBudget: config.contextBudget,
    tokenizer: config.tokenizer === "estimate" ? undefined : tiktokenTokenizer(config.tokenizer),
    fetch: config.capabilities.fetch,
    commands: config.capabilities.commands.allowed ? config.capabilities.commands : undefined,
    spill: config.spill,
    artifacts: config.artifacts,
    retention: { sweepIntervalMs: config.retention.sweepIntervalMs },
    leaseMs: config.worker.leaseMs,
    leaseMarginMs: config.worker.leaseMarginMs,
    concurrency: config.worker.concurrency,
    maxRunningPerPrincipal: config.worker.maxRunningPerPrincipal,
  };
}

/**
 * Where this process executes runs with COMMANDS_ALLOWED: logs how run_command's programs are kept
 * from outliving their calls here (command-containment.ts), found out now rather than at the first call.
 */
export async function logCommandContainment(config: Config, logger: Logger): Promise<void> {
  if (!config.capabilities.commands.allowed) return;
  const note = containmentNote(await containmentOnThisServer());
  logger[note.level](note.message);
}

/** One step of a shutdown, named for the log line of a shutdown that does not end in time. */
export type StopStep = <T>(what: string, work: () => Promise<T>) => Promise<T>;
const unnamed: StopStep = (_what, work) => work();

/**
 * Stops the process gracefully on its first SIGINT or SIGTERM: runs `stop`, then exits 0, or 1
 * if stopping failed. Install it before announcing readiness, so a signal sent by whoever waits
 * for that announcement is always handled. A shutdown that has not ended after `boundMs`
 * (SHUTDOWN_TIMEOUT_MS) — a database or a queue whose link hangs — ends the process with 1 and a
 * log line naming the step it was in: runs it could not hand back keep their lease until it
 * expires, and another worker takes them over then.
 */
export function stopOnSignals(logger: Logger, boundMs: number, stop: (step: StopStep) => Promise<void>): void {
  let stopping = false;
  const handle = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info("shutting down", { signal });
    let current = "shutting down";
    const step: StopStep = (what, work) => {
      current = what;
      return work();
    };
    setTimeout(() => {
      logger.error("shutdown did not end in time; exiting", { signal, timeoutMs: boundMs, notStopped: current });
      process.exit(1);
    }, boundMs).unref();
    try {
      await stop(step);
      logger.info("stopped", { signal });
      process.exit(0);
    } catch (error) {
      logger.error("shutdown failed", { error: String(error), step: current });
      process.exit(1);
    }
  };
  process.once("SIGINT", () => void handle("SIGINT"));
  process.once("SIGTERM", () => void handle("SIGTERM"));
}

/** The server's rate-limit buckets (RATE_LIMIT_PER_MINUTE): in Redis when REDIS_URL is set, else in this process; none when off. */
export async function openRateLimits(config: Config, logger: Logger): Promise<TokenBuckets | undefined> {
  return config.rateLimit && openBuckets(config, config.rateLimit, "rate limits", logger, "rate:");
}

/** The principals' rate-limit buckets (RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE), kept as the rate limits are; none when off. */
export async function openPrincipalRateLimits(config: Config, logger: Logger): Promise<TokenBuckets | undefined> {
  return config.principalRateLimit && openBuckets(config, config.principalRateLimit, "principals' rate limits", logger, "principal-rate:");
}

/** The failed authentications per client address (AUTH_FAILURES_PER_MINUTE), kept as the rate limits are; none when off. */
export async function openAuthFailures(config: Config, logger: Logger): Promise<TokenBuckets | undefined> {
  return config.authFailures && openBuckets(config, config.authFailures, "failed authentications", logger, "auth-failures:");
}

/** Buckets whose Redis keys start with REDIS_PREFIX and then `kind`: deployments sharing a Redis never share a bucket. */
async function openBuckets(config: Config, settings: RateLimitSettings, what: string, logger: Logger, kind: string): Promise<TokenBuckets> {
  const local = new InProcessTokenBuckets(settings);
  if (!config.redisUrl) {
    logger.info(`${what} are counted in this process (no REDIS_URL)`, settings);
    return local;
  }
  logger.info(`${what} are shared through Redis`, settings);
  return new FallbackTokenBuckets(
    await RedisTokenBuckets.connect(config.redisUrl, settings, { logger, prefix: `${config.redisPrefix}${kind}`, use: what }),
    local,
    logger,
    what,
  );
}
