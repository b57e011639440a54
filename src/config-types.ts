// The shape of Dossier's settings: what every part of it receives, typed. config.ts reads the
// environment into it; nothing here reads anything.
import type { CompactionPolicy } from "./config-files.js";
import type { SignInSettings } from "./config-sign-in.js";
import type { StdioCommandLine } from "./domain/capabilities/stdio-policy.js";
import type { AgentProfile } from "./runtime/agents.js";
import type { SpillPolicy } from "./runtime/spill/spill-policy.js";
import type { SandboxBudgets } from "./runtime/tools/sandbox-ledger.js";
import type { SandboxLimits } from "./runtime/tools/sandbox-usage.js";

export type Config = {
  port: number;
  host: string;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** Requests without an API key are refused; otherwise they act as the development principal. */
  authRequired: boolean;
  /** Browser origins approved besides the server's own (CORS_ORIGINS; default none). */
  corsOrigins: string[];
  /** Origins whose pages may frame the trace viewer (VIEWER_FRAME_ANCESTORS; default none). */
  viewerFrameAncestors: string[];
  /** The host names requests may be addressed to (ALLOWED_HOSTS); undefined: every name (a non-loopback bind with keys required). */
  allowedHosts?: string[];
  /** The app's own sign-in (AUTH_JWKS_URL and its companions); none when unset. */
  signIn?: SignInSettings;
  /** Encrypts MCP header and environment values at rest (SECRETS_KEY, base64 of 32 bytes). */
  secretsKey?: string;
  /** The bearer token /metrics requires (METRICS_TOKEN); open without it. */
  metricsToken?: string;
  /** Settings that were read but do nothing, with what to use instead: logged at start. */
  warnings: string[];
  /** The OpenAI-compatible model, or the scripted offline demo model when no key is configured. */
  model:
    | {
        kind: "openai";
        apiKey: string;
        baseURL?: string;
        model: string;
        contextWindow: number;
        /** Requests in flight at once to the model endpoint from one process (MODEL_MAX_CONCURRENCY). */
        maxConcurrency: number;
        /** How long a streaming reply may send nothing before it counts as cut off (MODEL_IDLE_TIMEOUT_MS). */
        idleTimeoutMs: number;
        /** The most one model reply may stream, in bytes of text, reasoning and tool calls (MODEL_MAX_REPLY_BYTES). */
        maxReplyBytes: number;
      }
    | { kind: "scripted" };
  /** Profiles from AGENTS_FILE; empty means the built-in `researcher` only. */
  agents: AgentProfile[];
  /** The operator's model prices file (MODEL_PRICES_FILE), read and set at start (none without it). */
  modelPricesFile?: string;
  /** OTLP/HTTP collector for finished spans; export is off without it. */
  otlpEndpoint?: string;
  /** Redis for pub/sub across instances; without it, events stay in this process. */
  redisUrl?: string;
  /** The prefix of every Redis channel (REDIS_PREFIX; default derived from the database). */
  redisPrefix: string;
  /** Whether this process executes runs (false: it only serves the API). */
  inProcessWorker: boolean;
  /** How long a shutdown (SIGTERM, SIGINT) may take before the process exits with 1 anyway (SHUTDOWN_TIMEOUT_MS). */
  shutdownTimeoutMs: number;
  /** How runs are executed by this process's worker (in process or `npm run worker`). */
  worker: {
    /** A run whose worker stops renewing its lease for this long is taken over by another (R17). */
    leaseMs: number;
    /**
     * The lease's safety margin (RUN_LEASE_MARGIN_MS): an attempt that has not renewed its lease
     * for leaseMs minus this stops itself, and a takeover waits leaseMs plus this since the last
     * renewal, so two attempts of a run never overlap.
     */
    leaseMarginMs: number;
    /** Runs one worker executes at once. */
    concurrency: number;
    /**
     * Runs one principal may have running at once across every worker (MAX_RUNNING_RUNS_PER_PRINCIPAL).
     * Default with keys required: WORKER_CONCURRENCY less one (at least 1), so one principal's long
     * runs never hold every slot of a worker and another principal's new run starts at once (a run
     * is never preempted: a slot held is held until the run ends); keyless (one person's deployment,
     * the development principal's), WORKER_CONCURRENCY: every slot. Claims interleave principals
     * either way. While a principal's API keys have runs waiting, its access tokens together hold at
     * most half of these places (at least one); the places no key run waits for are the tokens' too,
     * and a key run arriving while they hold more takes the next place that frees (never preempted).
     */
    maxRunningPerPrincipal: number;
    /** Where a worker process serves /metrics (off without it). */
    metricsPort?: number;
  };
  /**
   * What each principal's runs may cost per UTC day (DAILY_COST_LIMIT, decimal USD) unless the
   * operator set the principal's own limit (npm run limits:set); no limit without it.
   */
  dailyCostLimit?: string;
  /**
   * Runs one principal may have QUEUED at once (MAX_QUEUED_RUNS_PER_PRINCIPAL, default 1,000): an
   * admission or a schedule's fire beyond it is refused with a QueueFullError (the fire is recorded
   * FAILED), until some of them have started or been cancelled.
   */
  maxQueuedRunsPerPrincipal: number;
  /** Schedules one principal may have (MAX_SCHEDULES_PER_PRINCIPAL, default 100): createSchedule beyond it is a ScheduleLimitError. */
  maxSchedulesPerPrincipal: number;
  /** Live API keys one principal may have (MAX_API_KEYS_PER_PRINCIPAL, default 100): createApiKey beyond it is an ApiKeyLimitError. */
  maxApiKeysPerPrincipal: number;
  /**
   * Bytes of artifact content one principal may store, retained and unexpired temporary artifacts
   * together (MAX_ARTIFACT_BYTES_PER_PRINCIPAL, default 1 GiB): createArtifact beyond it is an
   * ArtifactStorageLimitError.
   */
  maxArtifactBytesPerPrincipal: number;
  /** Query and request limits (A7). */
  limits: {
    maxDepth: number;
    maxAliases: number;
    maxTokens: number;
    maxCost: number;
    maxBodyBytes: number;
    maxResponseBytes: number;
    maxPageSize: number;
    traceRecords: number;
  };
  maxSubscriptionsPerConnection: number;
  /** Open connections per client address (MAX_CONNECTIONS_PER_CLIENT) and the time a request's headers and body may take (REQUEST_TIMEOUT_MS). */
  connections: { maxPerClient: number; requestTimeoutMs: number };
  /**
   * The reverse proxies whose X-Forwarded-For names the client (TRUSTED_PROXIES: addresses and
   * CIDR ranges; none by default): every per-address limit counts a request they forward against
   * the right-most entry that is not one of them (server/client-address.ts).
   */
  trustedProxies: string[];
  /** Subscriptions one API key, and one principal, may hold open at once on an instance (MAX_SUBSCRIPTIONS_PER_KEY). */
  maxSubscriptionsPerKey: number;
  /** Subscriptions one access token may hold open at once on an instance (MAX_SUBSCRIPTIONS_PER_TOKEN): places of its own, not its key's. */
  maxSubscriptionsPerToken: number;
  /**
   * Request rate limits (RATE_LIMIT_PER_MINUTE; off when unset): a token bucket per credential, and
   * per client address for requests without one, holding up to `burst` (RATE_LIMIT_BURST; default
   * ten seconds' worth). Shared through Redis when REDIS_URL is set.
   */
  rateLimit?: { perMinute: number; burst: number };
  /**
   * One principal's requests, all its credentials together (RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE;
   * ten times RATE_LIMIT_PER_MINUTE by default, 0: not counted; only with RATE_LIMIT_PER_MINUTE),
   * holding as many seconds' worth as a credential's bucket; its access tokens together draw at most
   * half of it, so its API keys keep the other half. Keyless requests of the development
   * principal count against their address alone. Shared through Redis when REDIS_URL is set.
   */
  principalRateLimit?: { perMinute: number; burst: number };
  /**
   * Failed authentications per client address (AUTH_FAILURES_PER_MINUTE, default 60; 0: not
   * counted), up to `burst` at once (AUTH_FAILURES_BURST, default 20): past them the address's
   * credentials are refused with RATE_LIMITED before they are looked up. Shared through Redis
   * when REDIS_URL is set.
   */
  authFailures?: { perMinute: number; burst: number };
  /** Trusted documents (TRUSTED_DOCUMENTS_ONLY; TRUSTED_DOCUMENTS_DIR's manifests, documentId → document); see server/trusted-documents.ts. */
  trustedDocuments: { only: boolean; extra: Record<string, string> };
  /** GRAPHIQL: GraphiQL served (unset: unless trusted documents only), and exempt from trusted documents only. */
  graphiql?: boolean;
  /** Live trace updates that may wait for one slow subscriber before it must resync. */
  traceSubscriberBuffer: number;
  /**
   * Spans and events one run's trace keeps (MAX_TRACE_RECORDS; default 50,000): past it the run
   * goes on, its trace records one TRUNCATED event and then only span ends and model usage.
   */
  maxTraceRecords: number;
  /** Where each run's sandbox folder is created. */
  sandboxDir: string;
  /**
   * What one run's sandbox folder may hold (SANDBOX_MAX_BYTES, SANDBOX_MAX_ENTRIES) and what a
   * write may name (SANDBOX_MAX_PATH_DEPTH, SANDBOX_MAX_PATH_LENGTH); how many hours a folder is
   * kept after its run ended (SANDBOX_RETENTION_HOURS) and how often that is swept.
   *
   * `budgets`: the bytes of files the folders of one principal's runs may hold together
   * (SANDBOX_MAX_BYTES_PER_PRINCIPAL, default 1 GiB: four full folders, as many as one principal
   * runs at once by default) and every folder on this DATA_DIR (SANDBOX_MAX_BYTES_TOTAL, default
   * 4 GiB: four principals' full budgets, a small share of a server's disk), counting each folder
   * while it exists: its run running, waiting or paused, or ended and kept. A write past either
   * gets an error result and the run goes on; before refusing it, ended runs' folders are removed
   * early, oldest first (the principal's own, past its budget; anyone's, past the total). A paused
   * run's folder is never removed: it counts against its principal's budget until the run is
   * resumed and ends. Each instance bounds the writes of its own runs (see
   * runtime/tools/sandbox-ledger.ts for instances sharing one DATA_DIR); what a program
   * run_command ran writes is counted once it exited.
   */
  sandbox: { limits: SandboxLimits; budgets: SandboxBudgets; retentionHours: number; sweepIntervalMs: number };
  toolTimeoutMs: number;
  /**
   * One model reply's tool calls: the first MAX_TOOL_CALLS_PER_REPLY (64) execute, the others get
   * an error result; at most TOOL_MAX_CONCURRENCY (8) of them run at once.
   */
  toolCallLimits: { maxPerReply: number; maxConcurrency: number };
  /**
   * Human approval of tool calls: which calls wait for a person's decision (TOOL_APPROVALS, a
   * JSON object of tool-name pattern → "always" | "never"; none by default), and how long a
   * request waits before it counts as rejected (TOOL_APPROVAL_TIMEOUT_SECONDS).
   */
  toolApprovals: { rules: Record<string, "always" | "never">; timeoutSeconds: number };
  /**
   * Micro-compaction policy per tool (R5), from COMPACTION_POLICIES, a JSON object such as
   * {"*":"stale","query_order":"always","place_order":"never"}: never = always shown verbatim,
   * stale = cleared oldest first while a request is over budget, always = cleared once its turn is complete.
   */
  compactionPolicies: Record<string, CompactionPolicy>;
  /**
   * The context budget of every model request (R8): tokens kept free for the answer
   * (CONTEXT_RESERVED_OUTPUT) and for estimation error (CONTEXT_SAFETY_BUFFER), and the share of
   * the rest above which history is compacted (COMPACTION_TRIGGER_RATIO).
   */
  contextBudget: ContextBudgetSettings;
  /** What the context budget counts tokens with (TOKENIZER): `estimate` is the local estimator. */
  tokenizer: "estimate" | "o200k_base" | "cl100k_base";
  /** Tool capabilities beyond the always-on built-ins (R14, R15). */
  capabilities: CapabilitySettings;
  /**
   * Spilling of large tool results (R10–R12): policies by tool name ("*" for every tool), the
   * most read_spill returns per call, and how often handles of settled runs are swept.
   */
  spill: { policies: Record<string, Partial<SpillPolicy>>; readMaxBytes: number; sweepIntervalMs: number };
  /** How often the content of expired temporary artifacts is freed (W16). */
  artifacts: { sweepIntervalMs: number };
  /**
   * Trace retention's operator default (TRACE_RETENTION_DAYS, null: kept forever; TRACE_RETENTION_MODE)
   * and how often the sweep runs (TRACE_RETENTION_SWEEP_INTERVAL_MS).
   */
  retention: { days: number | null; mode: "DELETE" | "KEEP_SUMMARY"; sweepIntervalMs: number };
  /**
   * Webhooks (issue 22): hosts they may reach inside the network (WEBHOOK_ALLOWED_HOSTS), the delays
   * between attempts (WEBHOOK_RETRY_DELAYS_SECONDS), how long an attempt waits for the answer (WEBHOOK_TIMEOUT_MS).
   */
  webhooks: { allowedHosts: string[]; retryDelaysSeconds?: number[]; timeoutMs: number };
  /**
   * PostgreSQL when DATABASE_URL is set (poolSize: the connections this process may hold, DB_POOL_SIZE;
   * streamPoolSize: more, kept apart for starting live streams, DB_STREAM_POOL_SIZE); otherwise the
   * embedded PGlite database in dataDir.
   */
  database: { kind: "postgres"; url: string; timeouts: DatabaseTimeouts; poolSize: number; streamPoolSize: number } | { kind: "pglite"; dataDir: string };
};

/**
 * How long PostgreSQL may take before a call counts as failed (DB_*_TIMEOUT_MS): opening a
 * connection, a query as the client waits for it, a statement as the server runs it, and a
 * transaction left idle. Without them a link that hangs blocks a caller for minutes.
 */
export type DatabaseTimeouts = { connectMs: number; queryMs: number; statementMs: number; idleInTransactionMs: number };

export type ContextBudgetSettings = { reservedOutput: number; safetyBuffer: number; triggerRatio: number };

export type CapabilitySettings = {
  /** The command lines principals' STDIO MCP servers may start (MCP_STDIO_COMMANDS; none by default). */
  mcpStdioCommands: StdioCommandLine[];
  /** The environment names a principal may set for them (MCP_STDIO_ENV; none by default). */
  mcpStdioEnv: string[];
  /** Hosts principals' HTTP MCP servers may reach inside the network (none by default: public addresses only). */
  mcpHttpAllowedHosts: string[];
  /** How long a replaced MCP connection may wait for its in-flight calls before it is closed anyway. */
  mcpDrainTimeoutMs: number;
  /** How long a principal's MCP connections stay open once no run holds them and no one used them. */
  mcpIdleCloseMs: number;
  /**
   * What a principal's MCP server may send: one message's bytes (a result over it is refused while
   * it arrives; the model gets an error result), and tools/list's pages, tools and time.
   */
  mcpLimits: { resultMaxBytes: number; listMaxPages: number; listMaxTools: number; listTimeoutMs: number };
  /** Hosts the http_fetch tool may reach; empty: the tool is not offered. */
  fetch: { allowedHosts: string[]; maxBytes: number; timeoutMs: number };
  /** The run_command tool (off by default): programs run in the run's sandbox folder, without a shell. */
  commands: { allowed: boolean; timeoutMs: number; path: string };
};
