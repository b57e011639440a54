// The core of one Dossier process, whichever it is (a server, a worker process, a test): the
// database and the event bus it is given, the domain services (services.ts), the skills catalog,
// the registry of live MCP connections and — when this process executes runs — the agent runtime
// with its trace recorder. No API here: the server adds one over a core (api.ts), a worker process
// does not.
import { commandLinesOf, type StdioCommandLine } from "../domain/capabilities/stdio-policy.js";
import { startWebhookDelivery, type WebhookOptions } from "./webhooks.js";
import type { Services } from "../domain/services.js";
import type { SecretBox } from "../domain/secret-box.js";
import type { RunAnnouncer } from "../domain/runs/run-announcer.js";
import type { Database } from "../db/open-database.js";
import type { EventBus } from "../events/topics.js";
import type { Logger } from "../logger.js";
import { agentProfiles, type AgentProfile } from "../runtime/agents.js";
import { busRunAnnouncer } from "../runtime/adapters/bus-run-announcer.js";
import { mcpSdkConnector } from "../runtime/adapters/mcp-sdk-client.js";
import type { McpLimits } from "../runtime/adapters/mcp-limits.js";
import { createOutboundHttp, type Resolver } from "../outbound/outbound-http.js";
import { createHttpFetchClient } from "../runtime/tools/http-fetch.js";
import { McpRegistry } from "../runtime/mcp/mcp-registry.js";
import type { McpConnector } from "../runtime/ports/mcp.js";
import type { RunQueue } from "../runtime/ports/run-queue.js";
import { createRuntime, type Runtime, type RuntimeOptions } from "../runtime/runtime.js";
import { meteredTraceSink, type TraceMetrics } from "../runtime/trace-metrics/metered-trace-sink.js";
import { PrismaConversationLog } from "../runtime/adapters/prisma-conversation-log.js";
import { PrismaSpillStore } from "../runtime/adapters/prisma-spill-store.js";
import { prismaCallIdsLeftOut } from "../runtime/adapters/prisma-call-ids-left-out.js";
import { BusRunOutput } from "../runtime/adapters/bus-run-output.js";
import { PrismaRunState } from "../domain/runs/run-state.js";
import { requestBounds } from "../domain/costs/request-bound.js";
import { createMetrics, type DossierMetrics } from "../metrics/dossier-metrics.js";
import { SkillCatalog } from "../runtime/skills/skill-catalog.js";
import { OtlpHttpExporter, type SpanExporter } from "../trace/export/otlp-exporter.js";
import { Scheduler } from "../runtime/scheduler.js";
import { PrismaTraceRecorder } from "../trace/record/prisma-trace-recorder.js";
import { createServices, type RetentionOptions } from "./services.js";

export type { Services };

export type Core = {
  db: Database;
  events: EventBus;
  services: Services;
  /** The skills runs can load, as the API shows them (R13). */
  skills: SkillCatalog;
  /** Live MCP connections of this process (R14). */
  mcp: McpRegistry;
  /** Where ready runs are announced: the run queue on PostgreSQL, the event bus on the embedded default. */
  announcer: RunAnnouncer;
  /** This process's Prometheus instruments (S4), shared with no other app in the process. */
  metrics: DossierMetrics;
  /** The clock of expiries and late decisions: the system clock unless a test moves it. */
  now: () => Date;
  /** Present when this process executes runs (its worker is started). */
  runtime?: Runtime;
  /** Exports finished spans to the OTLP collector, when one is configured and runs execute here. */
  exporter?: SpanExporter;
  /** Stops the worker (runs in flight hand their leases back), then closes MCP connections and the exporter. */
  stop(): Promise<void>;
};

/** The runtime settings a core is given: the runtime's own, and where its spans are exported to. */
export type CoreRuntimeOptions = Omit<RuntimeOptions, "agents" | "skills" | "mcp" | "instance"> & {
  /** OTLP/HTTP collector to export finished spans to (off without it). */
  otlpEndpoint?: string;
  /** Spans and events one run's trace keeps (MAX_TRACE_RECORDS); unbounded without it. */
  maxTraceRecords?: number;
  /** The scheduler's longest sleep between looks at the schedules (default 1 s). */
  schedulerPollMs?: number;
};

/**
 * Principals' MCP servers: STDIO servers start only the listed programs; HTTP servers reach
 * addresses inside the network only on the listed hosts; replaced connections drain for at most
 * drainTimeoutMs; a principal's connections close once no run holds them and no one used them for idleCloseMs.
 */
export type McpOptions = {
  /** MCP_STDIO_COMMANDS' command lines (a string is parsed as an entry of it: `program arg …`). */
  stdioCommands?: readonly (string | StdioCommandLine)[];
  /** MCP_STDIO_ENV: the environment names a principal may set for them. */
  stdioEnv?: readonly string[];
  httpAllowedHosts?: readonly string[];
  /** Resolves HTTP servers' host names (tests replace it). */
  resolve?: Resolver;
  drainTimeoutMs?: number;
  /** MCP_IDLE_CLOSE_MS (5 minutes by default). */
  idleCloseMs?: number;
  /** The clock of idle periods and retries, in milliseconds (tests move it). */
  now?: () => number;
  /** What a server may send: a message's size, listing's pages, tools and time (MCP_RESULT_MAX_BYTES, MCP_LIST_*). */
  limits?: McpLimits;
  connector?: McpConnector;
  secrets?: SecretBox;
};

export type CoreOptions = {
  db: Database;
  events: EventBus;
  logger: Logger;
  artifactRetention?: Parameters<typeof createServices>[0]["artifactRetention"];
  /** Executes runs in this process with these settings (its worker starts at once); none without it. */
  runtime?: CoreRuntimeOptions;
  /** Configured agent profiles (over the built-in `researcher`). */
  agents?: AgentProfile[];
  mcp?: McpOptions;
  /**
   * The cross-process run queue (PostgreSQL deployments): admitted runs are announced on it, and
   * this process's worker, if any, wakes for and takes its runs from it. Without it, runs are
   * announced on the event bus.
   */
  runQueue?: RunQueue & RunAnnouncer;
  /** The clock artifact expiry and late tool-call decisions are decided by (tests move it); the system clock by default. */
  now?: () => Date;
  /** Webhooks: where they may reach, and — with `deliver` — this process delivers them (the server does). */
  webhooks?: WebhookOptions;
  /** Trace retention's operator default; traces are kept forever without it. */
  retention?: RetentionOptions;
  /** The most runs one principal may have QUEUED (MAX_QUEUED_RUNS_PER_PRINCIPAL): admissions and schedule fires beyond it are refused. */
  maxQueuedRunsPerPrincipal?: number;
  /** The most schedules one principal may have (MAX_SCHEDULES_PER_PRINCIPAL): createSchedule beyond it is refused. */
  maxSchedulesPerPrincipal?: number;
  /** The most live API keys one principal may have (MAX_API_KEYS_PER_PRINCIPAL): createApiKey beyond it is refused. */
  maxApiKeysPerPrincipal?: number;
  /** Bytes of artifact content one principal may store (MAX_ARTIFACT_BYTES_PER_PRINCIPAL): createArtifact beyond it is refused. */
  maxArtifactBytesPerPrincipal?: number;
};

export function createCore({
  db,
  events,
  logger,
  artifactRetention,
  runtime: runtimeOptions,
  agents = [],
  mcp: mcpOptions = {},
  runQueue,
  now,
  webhooks = {},
  retention,
  maxQueuedRunsPerPrincipal,
  maxSchedulesPerPrincipal,
  maxApiKeysPerPrincipal,
  maxArtifactBytesPerPrincipal,
}: CoreOptions): Core {
  const stdioCommands = commandLinesOf(mcpOptions.stdioCommands);
  const stdioEnv = mcpOptions.stdioEnv ?? [];
  const httpAllowedHosts = mcpOptions.httpAllowedHosts ?? [];
  const announcer = runQueue ?? busRunAnnouncer(events);
  const scored: { notify?: (scoreId: string) => void } = {};
  const services = createServices({
    scored,
    prisma: db.prisma,
    events,
    announcer,
    artifactRetention,
    now,
    agents: [...agentProfiles(agents).values()],
    mcp: { stdioCommands, stdioEnv, httpAllowedHosts, secrets: mcpOptions.secrets },
    webhookAllowedHosts: webhooks.allowedHosts,
    retention,
    instanceId: db.instanceId,
    weekStorage: db.kind === "postgres" ? db : undefined,
    maxQueuedRunsPerPrincipal,
    maxSchedulesPerPrincipal,
    maxApiKeysPerPrincipal,
    maxArtifactBytesPerPrincipal,
    logger,
  });
  const webhookDelivery = webhooks.deliver ? startWebhookDelivery({ db, events, services, logger, options: webhooks }) : undefined;
  const metrics = createMetrics({ prisma: db.prisma });
  const skills = new SkillCatalog({ skills: services.skills });
  const mcpOutbound = createOutboundHttp({ allowedHosts: httpAllowedHosts, setting: "MCP_HTTP_ALLOWED_HOSTS", resolve: mcpOptions.resolve, logger });
  const mcp = new McpRegistry({
    servers: services.mcpServers,
    events,
    logger,
    connector: mcpOptions.connector ?? mcpSdkConnector(mcpOutbound.fetchFor, mcpOptions.limits),
    stdioCommands,
    stdioEnv,
    secrets: mcpOptions.secrets,
    drainTimeoutMs: mcpOptions.drainTimeoutMs ?? 120_000,
    idleCloseMs: mcpOptions.idleCloseMs,
    now: mcpOptions.now,
  });
  // http_fetch's connections, shared by every run of this process and closed at its stop.
  const fetchSettings = runtimeOptions?.fetch;
  const fetchOutbound = fetchSettings && !fetchSettings.client ? createHttpFetchClient(fetchSettings, logger) : undefined;
  const executing = runtimeOptions
    ? startRuntime(
        { db, events, logger, services, announcer, skills, mcp, metrics, agents, runQueue },
        fetchSettings && fetchOutbound ? { ...runtimeOptions, fetch: { ...fetchSettings, client: fetchOutbound } } : runtimeOptions,
      )
    : undefined;
  // Scores made through this process's API are exported with its spans (the exporter exists where runs execute).
  // Schedules fire wherever runs execute: the embedded server's one process, every worker on PostgreSQL.
  const scheduler = executing ? new Scheduler({ work: services.schedules, logger, pollMs: runtimeOptions?.schedulerPollMs }) : undefined;
  scheduler?.start();
  const exporter = executing?.exporter;
  if (exporter) scored.notify = (scoreId) => exporter.scoreCreated(scoreId);
  return {
    db,
    events,
    services,
    skills,
    mcp,
    announcer,
    metrics,
    now: now ?? (() => new Date()),
    runtime: executing?.runtime,
    exporter: executing?.exporter,
    async stop() {
      await webhookDelivery?.close();
      await scheduler?.stop();
      await executing?.runtime.worker.stop();
      await mcp.close();
      await mcpOutbound.close();
      await fetchOutbound?.close();
      await executing?.exporter?.close();
    },
  };
}

/** The runtime of a process that executes runs, over its own trace recorder; its worker starts at once. */
function startRuntime(
  parts: Pick<Core, "db" | "events" | "services" | "announcer" | "skills" | "mcp" | "metrics"> & {
    logger: Logger;
    agents: AgentProfile[];
    runQueue?: RunQueue;
  },
  { otlpEndpoint, maxTraceRecords, schedulerPollMs: _poll, ...configured }: CoreRuntimeOptions,
): { runtime: Runtime; exporter?: SpanExporter } {
  // The cost caps price each request's bound from the price table.
  const options = { costs: requestBounds(parts.db.prisma), ...configured };
  const { db, events, logger } = parts;
  const exporter = otlpEndpoint ? new OtlpHttpExporter({ prisma: db.prisma, endpoint: otlpEndpoint, logger }) : undefined;
  // What runs record is counted as it is committed.
  const trace = meteredTraceSink(new PrismaTraceRecorder({ prisma: db.prisma, events, exporter, maxRecords: maxTraceRecords }), traceMetricsOf(parts.metrics));
  const ports = {
    trace,
    runs: new PrismaRunState({ prisma: db.prisma, events, trace, dailyCostLimit: options.dailyCostLimit }),
    log: new PrismaConversationLog(db.prisma),
    spills: new PrismaSpillStore(db.prisma),
    output: new BusRunOutput(events, { logger }),
    callIdsLeftOut: prismaCallIdsLeftOut(db.prisma),
  };
  const runtime = createRuntime(
    { events, logger, services: parts.services, announcer: parts.announcer, ...ports },
    {
      ...options,
      agents: parts.agents,
      skills: parts.skills,
      mcp: parts.mcp,
      queue: parts.runQueue ?? options.queue,
      instance: { id: db.instanceId, isConnected: (id) => db.isInstanceConnected(id) },
    },
  );
  runtime.worker.start();
  return { runtime, exporter };
}

/** The runs' spans, events and model usage, counted in this process's metrics. */
function traceMetricsOf(metrics: DossierMetrics): TraceMetrics {
  return {
    spanStarted: (kind) => metrics.countSpan(kind),
    eventRecorded: (kind) => metrics.countEvent(kind),
    tokensUsed: (usage) => metrics.countTokens(usage),
  };
}
