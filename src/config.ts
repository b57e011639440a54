// The one place that reads the environment. Everything else receives a typed Config.
import { z } from "zod";
import { approvalRules, parseCompactionPolicies, readAgents, readTrustedDocuments, spillPolicies } from "./config-files.js";
import { accessEnv, allowedHostsOf, redisPrefixOf, stdioSettings } from "./config-access.js";
import { signInEnv, signInOf } from "./config-sign-in.js";
import { type McpClientConfig, parseMcpClientConfig } from "./config-mcp-client.js";
import type { Config, DatabaseTimeouts } from "./config-types.js";
import { rateLimitsOf } from "./config-rate-limits.js";
import { sandboxEnv, sandboxOf } from "./config-sandbox.js";
import { webhookEnv, webhooksOf } from "./config-webhooks.js";
import { ConfigError, commaList, exactHosts, flag, json, number, parseEnv, port, postgresUrl, whole } from "./config-rules.js";

export type { CompactionPolicy } from "./config-files.js";
export { ConfigError } from "./config-rules.js";
export type { McpClientConfig } from "./config-mcp-client.js";

/** Parses `npm run mcp`'s environment (process.env by default), as loadConfig does the server's. */
export const loadMcpClientConfig = (env: Record<string, string | undefined> = process.env): McpClientConfig => parseMcpClientConfig(env);
export type { StdioCommandLine } from "./domain/capabilities/stdio-policy.js";
export type { AgentProfile } from "./runtime/agents.js";
export type { SpillPolicy } from "./runtime/spill/spill-policy.js";
export type { CapabilitySettings, Config, ContextBudgetSettings, DatabaseTimeouts } from "./config-types.js";

const envSchema = z.object({
  PORT: port.default(4000),
  HOST: z.string().min(1, "must not be empty").default("127.0.0.1"),
  DATA_DIR: z.string().min(1, "must not be empty").default("./.data"),
  DATABASE_URL: postgresUrl.optional(),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: z.url({ error: "must be a URL such as https://api.openai.com/v1" }).optional(),
  MODEL: z.string().min(1).default("gpt-4o-mini"),
  MODEL_MAX_CONCURRENCY: whole(1, "min").default(16),
  MODEL_IDLE_TIMEOUT_MS: whole(100).default(300_000),
  MODEL_MAX_REPLY_BYTES: whole(1024, "min").default(16 * 1024 * 1024),
  MODEL_CONTEXT_WINDOW: whole(16_000, "both", "must be at least 16000 (8000 reserved output + 3000 safety buffer + room to work)").default(128_000),
  AGENTS_FILE: z.string().min(1).optional(),
  /** The operator's model prices, a JSON file (README "Cost and budgets"), set at every start. */
  MODEL_PRICES_FILE: z.string().min(1).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ error: "must be a URL such as http://127.0.0.1:4318" }).optional(),
  REDIS_URL: z
    .string()
    .refine((value) => /^rediss?:\/\/.+/.test(value), { message: "must be a Redis URL such as redis://127.0.0.1:6379" })
    .optional(),
  IN_PROCESS_WORKER: flag.default(true),
  SHUTDOWN_TIMEOUT_MS: whole(1_000, "min").default(25_000),
  MAX_SUBSCRIPTIONS_PER_CONNECTION: whole(1).default(50),
  MAX_SUBSCRIPTIONS_PER_KEY: whole(1).default(500),
  MAX_SUBSCRIPTIONS_PER_TOKEN: whole(1).default(50),
  RATE_LIMIT_PER_MINUTE: whole(1, "min").optional(),
  RATE_LIMIT_BURST: whole(1, "min").optional(),
  /** One principal's requests per minute, all its credentials together (0: not counted); ten times RATE_LIMIT_PER_MINUTE by default. */
  RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE: whole(0).optional(),
  /** Failed authentications per client address and minute (0: not counted), and how many at once. */
  AUTH_FAILURES_PER_MINUTE: whole(0).default(60),
  AUTH_FAILURES_BURST: whole(1, "min").default(20),
  TRACE_SUBSCRIBER_BUFFER: whole(10).default(1_000),
  MAX_TRACE_RECORDS: whole(1, "both", "must be a positive whole number").default(50_000),
  TOOL_TIMEOUT_MS: whole(100).default(60_000),
  MAX_TOOL_CALLS_PER_REPLY: whole(1, "min").default(64),
  TOOL_MAX_CONCURRENCY: whole(1, "min").default(8),
  TOOL_APPROVALS: json('{"run_command":"always","mcp__*__write*":"always","*":"never"}').pipe(approvalRules).optional(),
  TOOL_APPROVAL_TIMEOUT_SECONDS: whole(1, "min").default(3_600),
  COMPACTION_POLICIES: z.string().optional(),
  // The answer and the history summaries are written within the reserved output: it cannot be tiny.
  CONTEXT_RESERVED_OUTPUT: whole(1_024, "both").default(8_000),
  CONTEXT_SAFETY_BUFFER: whole(0, "both").default(3_000),
  COMPACTION_TRIGGER_RATIO: number.gt(0, "must be greater than 0 and at most 1").max(1, "must be greater than 0 and at most 1").default(0.9),
  // What the context budget counts tokens with (R9): the local estimator, or a BPE vocabulary
  // shipped with js-tiktoken (runtime/ports/tokenizer.ts; config.test.ts keeps the lists equal).
  TOKENIZER: z.enum(["estimate", "o200k_base", "cl100k_base"], { error: "must be estimate, o200k_base or cl100k_base" }).default("estimate"),
  SPILL_POLICIES: json('{"*":{"thresholdChars":32000},"http_fetch":{"strategy":"head"}}').pipe(spillPolicies).optional(),
  SPILL_READ_MAX_BYTES: whole(1_024, "min").default(16_384),
  SPILL_SWEEP_INTERVAL_MS: whole(100).default(60_000),
  ARTIFACT_SWEEP_INTERVAL_MS: whole(100).default(300_000),
  // Trace retention: the operator's default days (unset: traces are kept forever), what expiry
  // keeps of a trace under that default, and how often the sweep runs.
  TRACE_RETENTION_DAYS: whole(1, "both").max(36_500, "must be at most 36500").optional(),
  TRACE_RETENTION_MODE: z.enum(["DELETE", "KEEP_SUMMARY"], { error: "must be DELETE or KEEP_SUMMARY" }).default("DELETE"),
  TRACE_RETENTION_SWEEP_INTERVAL_MS: whole(1_000).default(600_000),
  AUTH_REQUIRED: flag.optional(),
  ...accessEnv,
  ...signInEnv,
  /** Replaced by MCP_STDIO_COMMANDS; read only to warn that it is ignored. */
  MCP_STDIO_ALLOWED: z.string().optional(),
  SECRETS_KEY: z
    .string()
    .refine((value) => Buffer.from(value, "base64").length === 32 && /^[A-Za-z0-9+/]+=*$/.test(value), {
      message: "must be 32 random bytes in base64, e.g. from: node -e \"console.log(require('crypto').randomBytes(32).toString('base64'))\"",
    })
    .optional(),
  METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  CORS_ORIGINS: commaList(
    (origin) => URL.canParse(origin) && new URL(origin).origin === origin,
    "origins",
    "https://app.example.com,http://localhost:5173",
  ).default([]),
  VIEWER_FRAME_ANCESTORS: commaList(
    (origin) => URL.canParse(origin) && /^https?:$/.test(new URL(origin).protocol) && new URL(origin).origin === origin,
    "origins (scheme, host and port only)",
    "https://app.example.com,http://localhost:5173",
  ).default([]),
  MCP_DRAIN_TIMEOUT_MS: whole(0).default(120_000),
  MCP_IDLE_CLOSE_MS: whole(1_000, "min").default(300_000),
  MCP_RESULT_MAX_BYTES: whole(65_536, "min").default(10_485_760),
  MCP_LIST_MAX_PAGES: whole(1, "min").default(50),
  MCP_LIST_MAX_TOOLS: whole(1, "min").default(1_000),
  MCP_LIST_TIMEOUT_MS: whole(100, "min").default(30_000),
  FETCH_ALLOWED_HOSTS: commaList(
    (host) => /^(\*\.)?[a-z0-9.-]+(:\d{1,5})?$/.test(host),
    "host names",
    "example.com,*.example.org,127.0.0.1:8080",
    (host) => host.toLowerCase(),
  ).default([]),
  // Named exactly: a wildcard would let names someone outside controls lead inside the network.
  MCP_HTTP_ALLOWED_HOSTS: exactHosts("mcp.internal.example,127.0.0.1:8931").default([]),
  ...webhookEnv,
  FETCH_MAX_BYTES: whole(1_024).default(1_048_576),
  FETCH_TIMEOUT_MS: whole(100).default(15_000),
  ...sandboxEnv,
  COMMANDS_ALLOWED: flag.default(false),
  COMMAND_TIMEOUT_MS: whole(100).default(30_000),
  RUN_LEASE_MS: whole(500, "min").default(15_000),
  // Unset: a fifth of the lease, at most 3 s (checked against RUN_LEASE_MS in loadConfig).
  RUN_LEASE_MARGIN_MS: whole(0, "min").optional(),
  DB_CONNECT_TIMEOUT_MS: whole(100, "min").default(5_000),
  DB_QUERY_TIMEOUT_MS: whole(100, "min").default(65_000),
  DB_STATEMENT_TIMEOUT_MS: whole(100, "min").default(60_000),
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: whole(100, "min").default(10_000),
  // Unset: grows with WORKER_CONCURRENCY (see poolSize).
  DB_POOL_SIZE: whole(1, "min").optional(),
  DB_STREAM_POOL_SIZE: whole(0, "min").default(4),
  WORKER_CONCURRENCY: whole(1, "min").default(4),
  MAX_RUNNING_RUNS_PER_PRINCIPAL: whole(1, "min").optional(),
  MAX_QUEUED_RUNS_PER_PRINCIPAL: whole(1, "min").default(1_000),
  MAX_SCHEDULES_PER_PRINCIPAL: whole(1, "min").default(100),
  MAX_API_KEYS_PER_PRINCIPAL: whole(1, "min").default(100),
  MAX_ARTIFACT_BYTES_PER_PRINCIPAL: whole(1, "min").max(2_147_483_647, "must be at most 2147483647").default(1_073_741_824),
  DAILY_COST_LIMIT: z
    .string()
    .regex(/^\d{1,10}(\.\d{1,10})?$/, "must be a decimal amount in USD, such as 25 or 2.50")
    .optional(),
  METRICS_PORT: port.optional(),
  MAX_QUERY_DEPTH: whole(2, "min").default(15),
  MAX_QUERY_ALIASES: whole(0, "min").default(30),
  MAX_QUERY_TOKENS: whole(100, "min").default(5_000),
  MAX_QUERY_COST: whole(10, "min").default(100_000),
  MAX_PAGE_SIZE: whole(1, "min").default(200),
  MAX_REQUEST_BYTES: whole(1_024, "min").default(1_048_576),
  MAX_RESPONSE_BYTES: whole(65_536, "min").default(33_554_432),
  MAX_CONNECTIONS_PER_CLIENT: whole(1, "min").default(256),
  REQUEST_TIMEOUT_MS: whole(100, "min").default(30_000),
  TRUSTED_DOCUMENTS_ONLY: flag.default(false),
  TRUSTED_DOCUMENTS_DIR: z.string().optional(),
  GRAPHIQL: flag.optional(),
});

type EnvValues = z.output<typeof envSchema>;

/** Parses an environment (process.env by default); throws ConfigError listing every bad value. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const { values, present } = parseEnv(envSchema, env);
  // A window the reserves fill leaves no room for any request: say so now, not on the first run.
  const reserved = values.CONTEXT_RESERVED_OUTPUT + values.CONTEXT_SAFETY_BUFFER;
  if (values.MODEL_CONTEXT_WINDOW <= reserved) {
    throw new ConfigError([
      `CONTEXT_RESERVED_OUTPUT=${values.CONTEXT_RESERVED_OUTPUT} + CONTEXT_SAFETY_BUFFER=${values.CONTEXT_SAFETY_BUFFER}: must be less than MODEL_CONTEXT_WINDOW=${values.MODEL_CONTEXT_WINDOW}`,
    ]);
  }
  return {
    ...serverSettings(values),
    ...runSettings(values, present),
    webhooks: webhooksOf(values),
    database: values.DATABASE_URL
      ? {
          kind: "postgres",
          url: values.DATABASE_URL,
          timeouts: databaseTimeouts(values),
          poolSize: poolSize(values),
          streamPoolSize: values.DB_STREAM_POOL_SIZE,
        }
      : { kind: "pglite", dataDir: values.DATA_DIR },
  };
}

function databaseTimeouts(values: EnvValues): DatabaseTimeouts {
  return {
    connectMs: values.DB_CONNECT_TIMEOUT_MS,
    queryMs: values.DB_QUERY_TIMEOUT_MS,
    statementMs: values.DB_STATEMENT_TIMEOUT_MS,
    idleInTransactionMs: values.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  };
}

/**
 * The PostgreSQL connections one process may hold: DB_POOL_SIZE, or a quarter of the worker's
 * concurrency, at least 10 and at most 50. A run holds a connection only while one of its
 * statements runs, but a worker that starts or settles many runs at once sends about fifteen
 * statements for each; with 10 connections for 100 runs they queue behind each other for seconds.
 * Connections open only when needed, so an instance that executes no runs opens no more.
 */
function poolSize(values: EnvValues): number {
  return values.DB_POOL_SIZE ?? Math.max(10, Math.min(50, Math.ceil(values.WORKER_CONCURRENCY / 4)));
}

/** The lease margin: RUN_LEASE_MARGIN_MS, or a fifth of the lease (at most 3 s); at most a third of the lease. */
function leaseMargin(values: EnvValues): number {
  const margin = values.RUN_LEASE_MARGIN_MS ?? Math.min(3_000, Math.floor(values.RUN_LEASE_MS / 5));
  // The heartbeat renews every third of the lease: a larger margin would stop healthy attempts.
  if (margin * 3 > values.RUN_LEASE_MS) {
    throw new ConfigError([`RUN_LEASE_MARGIN_MS=${margin}: must be at most a third of RUN_LEASE_MS=${values.RUN_LEASE_MS}`]);
  }
  return margin;
}

/** Whether requests need a key: keyless development access is the embedded default's convenience, never PostgreSQL's. */
const authRequiredOf = (values: EnvValues): boolean => values.AUTH_REQUIRED ?? values.DATABASE_URL !== undefined;

/**
 * MAX_RUNNING_RUNS_PER_PRINCIPAL's default. With keys required, more than one principal may run:
 * one less than WORKER_CONCURRENCY (at least 1), so one principal's long runs never hold every slot
 * of a worker, and another principal's run starts at once instead of when one of them ends (runs
 * are never preempted). Keyless, a deployment is one person's (its requests are the development
 * principal's): that principal may use every slot. One principal behind keys sets it to the concurrency.
 */
function defaultRunningCap(values: EnvValues): number {
  return authRequiredOf(values) ? Math.max(1, values.WORKER_CONCURRENCY - 1) : values.WORKER_CONCURRENCY;
}

/** What the API server is: where it listens, who may call it and how much one request may ask. */
function serverSettings(values: EnvValues) {
  const authRequired = authRequiredOf(values);
  return {
    port: values.PORT,
    host: values.HOST,
    logLevel: values.LOG_LEVEL,
    authRequired,
    corsOrigins: values.CORS_ORIGINS,
    viewerFrameAncestors: values.VIEWER_FRAME_ANCESTORS,
    allowedHosts: allowedHostsOf(values, authRequired),
    signIn: signInOf(values),
    metricsToken: values.METRICS_TOKEN,
    secretsKey: values.SECRETS_KEY,
    warnings:
      values.MCP_STDIO_ALLOWED === undefined
        ? []
        : ["MCP_STDIO_ALLOWED is ignored: list the programs STDIO MCP servers may start in MCP_STDIO_COMMANDS (absolute paths, comma-separated)"],
    redisUrl: values.REDIS_URL,
    redisPrefix: redisPrefixOf(values),
    limits: {
      maxDepth: values.MAX_QUERY_DEPTH,
      maxAliases: values.MAX_QUERY_ALIASES,
      maxTokens: values.MAX_QUERY_TOKENS,
      maxCost: values.MAX_QUERY_COST,
      maxBodyBytes: values.MAX_REQUEST_BYTES,
      maxResponseBytes: values.MAX_RESPONSE_BYTES,
      maxPageSize: values.MAX_PAGE_SIZE,
      traceRecords: values.MAX_TRACE_RECORDS,
    },
    maxSubscriptionsPerConnection: values.MAX_SUBSCRIPTIONS_PER_CONNECTION,
    maxSubscriptionsPerKey: values.MAX_SUBSCRIPTIONS_PER_KEY,
    maxSubscriptionsPerToken: values.MAX_SUBSCRIPTIONS_PER_TOKEN,
    connections: { maxPerClient: values.MAX_CONNECTIONS_PER_CLIENT, requestTimeoutMs: values.REQUEST_TIMEOUT_MS },
    trustedProxies: values.TRUSTED_PROXIES,
    ...rateLimitsOf(values.RATE_LIMIT_PER_MINUTE, values.RATE_LIMIT_BURST, values.RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE),
    authFailures: values.AUTH_FAILURES_PER_MINUTE > 0 ? { perMinute: values.AUTH_FAILURES_PER_MINUTE, burst: values.AUTH_FAILURES_BURST } : undefined,
    traceSubscriberBuffer: values.TRACE_SUBSCRIBER_BUFFER,
    maxTraceRecords: values.MAX_TRACE_RECORDS,
    trustedDocuments: { only: values.TRUSTED_DOCUMENTS_ONLY, extra: values.TRUSTED_DOCUMENTS_DIR ? readTrustedDocuments(values.TRUSTED_DOCUMENTS_DIR) : {} },
    graphiql: values.GRAPHIQL,
  } satisfies Partial<Config>;
}

/**
 * The operator's TOOL_APPROVALS. A command runs as the server's own user (it can read the server's
 * environment through /proc and every run's sandbox), so with COMMANDS_ALLOWED every run_command
 * call waits for a person unless TOOL_APPROVALS names run_command itself: an exact name beats
 * every pattern, so a `"*": "never"` does not lift it, `"run_command": "never"` does.
 */
function operatorApprovals(values: EnvValues): Record<string, "always" | "never"> {
  const rules = values.TOOL_APPROVALS ?? {};
  if (!values.COMMANDS_ALLOWED || Object.hasOwn(rules, "run_command")) return rules;
  return { ...rules, run_command: "always" };
}

/** How runs execute: the model, the profiles, the worker, the context budget, the tools, spilling and the sweeps. */
function runSettings(values: EnvValues, present: Record<string, string | undefined>) {
  return {
    model: values.OPENAI_API_KEY
      ? {
          kind: "openai",
          apiKey: values.OPENAI_API_KEY,
          baseURL: values.OPENAI_BASE_URL,
          model: values.MODEL,
          contextWindow: values.MODEL_CONTEXT_WINDOW,
          maxConcurrency: values.MODEL_MAX_CONCURRENCY,
          idleTimeoutMs: values.MODEL_IDLE_TIMEOUT_MS,
          maxReplyBytes: values.MODEL_MAX_REPLY_BYTES,
        }
      : { kind: "scripted" },
    agents: values.AGENTS_FILE ? readAgents(values.AGENTS_FILE) : [],
    modelPricesFile: values.MODEL_PRICES_FILE,
    otlpEndpoint: values.OTEL_EXPORTER_OTLP_ENDPOINT,
    dailyCostLimit: values.DAILY_COST_LIMIT,
    maxQueuedRunsPerPrincipal: values.MAX_QUEUED_RUNS_PER_PRINCIPAL,
    maxSchedulesPerPrincipal: values.MAX_SCHEDULES_PER_PRINCIPAL,
    maxApiKeysPerPrincipal: values.MAX_API_KEYS_PER_PRINCIPAL,
    maxArtifactBytesPerPrincipal: values.MAX_ARTIFACT_BYTES_PER_PRINCIPAL,
    inProcessWorker: values.IN_PROCESS_WORKER,
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS,
    worker: {
      leaseMs: values.RUN_LEASE_MS,
      leaseMarginMs: leaseMargin(values),
      concurrency: values.WORKER_CONCURRENCY,
      maxRunningPerPrincipal: values.MAX_RUNNING_RUNS_PER_PRINCIPAL ?? defaultRunningCap(values),
      metricsPort: values.METRICS_PORT,
    },
    ...sandboxOf(values),
    toolTimeoutMs: values.TOOL_TIMEOUT_MS,
    toolCallLimits: { maxPerReply: values.MAX_TOOL_CALLS_PER_REPLY, maxConcurrency: values.TOOL_MAX_CONCURRENCY },
    toolApprovals: { rules: operatorApprovals(values), timeoutSeconds: values.TOOL_APPROVAL_TIMEOUT_SECONDS },
    compactionPolicies: values.COMPACTION_POLICIES ? parseCompactionPolicies(values.COMPACTION_POLICIES) : {},
    contextBudget: {
      reservedOutput: values.CONTEXT_RESERVED_OUTPUT,
      safetyBuffer: values.CONTEXT_SAFETY_BUFFER,
      triggerRatio: values.COMPACTION_TRIGGER_RATIO,
    },
    tokenizer: values.TOKENIZER,
    capabilities: {
      // Starting a local program is the operator's decision, on every database: none by default.
      ...stdioSettings(values),
      mcpHttpAllowedHosts: values.MCP_HTTP_ALLOWED_HOSTS,
      mcpDrainTimeoutMs: values.MCP_DRAIN_TIMEOUT_MS,
      mcpIdleCloseMs: values.MCP_IDLE_CLOSE_MS,
      mcpLimits: {
        resultMaxBytes: values.MCP_RESULT_MAX_BYTES,
        listMaxPages: values.MCP_LIST_MAX_PAGES,
        listMaxTools: values.MCP_LIST_MAX_TOOLS,
        listTimeoutMs: values.MCP_LIST_TIMEOUT_MS,
      },
      fetch: { allowedHosts: values.FETCH_ALLOWED_HOSTS, maxBytes: values.FETCH_MAX_BYTES, timeoutMs: values.FETCH_TIMEOUT_MS },
      // Commands get this PATH and nothing else of the server's environment (no keys, no URLs).
      commands: { allowed: values.COMMANDS_ALLOWED, timeoutMs: values.COMMAND_TIMEOUT_MS, path: present.PATH ?? "/usr/local/bin:/usr/bin:/bin" },
    },
    spill: { policies: values.SPILL_POLICIES ?? {}, readMaxBytes: values.SPILL_READ_MAX_BYTES, sweepIntervalMs: values.SPILL_SWEEP_INTERVAL_MS },
    artifacts: { sweepIntervalMs: values.ARTIFACT_SWEEP_INTERVAL_MS },
    retention: { days: values.TRACE_RETENTION_DAYS ?? null, mode: values.TRACE_RETENTION_MODE, sweepIntervalMs: values.TRACE_RETENTION_SWEEP_INTERVAL_MS },
  } satisfies Partial<Config>;
}
