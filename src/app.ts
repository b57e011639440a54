// Dossier as a value: services and the GraphQL server over an open database and an event bus.
// main.ts builds one from configuration; tests build as many as they need.
import { GraphQLError } from "graphql";
import { createYoga, useReadinessCheck, type YogaServerInstance } from "graphql-yoga";
import type { Database } from "./db/open-database.js";
import type { EventBus, EventPublisher } from "./events/topics.js";
import { type Authenticate, authorizationFromConnectionParams, createAuthenticator } from "./graphql/authenticate.js";
import type { GraphQLContext } from "./graphql/context.js";
import { schema } from "./graphql/schema.js";
import type { Logger } from "./logger.js";
import { graphiqlDefaultQuery, graphiqlDefaultTabs } from "./server/graphiql.js";
import { useTraceViewer } from "./server/trace-viewer.js";
import { type AgentProfile, agentProfiles } from "./runtime/agents.js";
import { createRuntime, type Runtime, type RuntimeOptions } from "./runtime/runtime.js";
import { createServices, type Services } from "./services.js";
import { mcpSdkConnector } from "./runtime/adapters/mcp-sdk-client.js";
import { createOutboundHttp, type Resolver } from "./runtime/adapters/outbound-http.js";
import { McpRegistry } from "./runtime/mcp/mcp-registry.js";
import type { McpConnector } from "./runtime/ports/mcp.js";
import { SkillCatalog } from "./runtime/skills/skill-catalog.js";
import type { RunQueue } from "./runtime/ports/run-queue.js";
import { bodyLimitPlugin, DEFAULT_QUERY_LIMITS, type QueryLimits, queryLimitsPlugin } from "./server/hardening.js";
import { metricsPlugin } from "./server/metrics-plugin.js";
import { createMetrics, type DossierMetrics } from "./metrics/dossier-metrics.js";
import { corsFor, jsonPostsOnly } from "./server/cross-site.js";
import { KeyRevocations, useKeyRevocation } from "./server/key-revocations.js";
import { authenticateFirst } from "./server/authenticate-first.js";
import { useCompiledExecution } from "./server/compiled-execution.js";
import type { SecretBox } from "./domain/capabilities/secret-box.js";

export type App = {
  yoga: YogaServerInstance<Record<string, never>, GraphQLContext>;
  services: Services;
  authenticate: Authenticate;
  db: Database;
  events: EventBus;
  /** Present when this instance executes runs (its worker is started). */
  runtime?: Runtime;
  /** Live MCP connections of this instance (R14). */
  mcp: McpRegistry;
  /** The request limits every transport applies (A7). */
  limits: QueryLimits;
  /** The browser origins approved besides the server's own (CORS_ORIGINS); WebSocket upgrades are held to them too. */
  corsOrigins: readonly string[];
  /** Ends subscriptions whose API key is revoked (WebSocket connections are closed by the HTTP server). */
  keyRevocations: KeyRevocations;
  /** This app's Prometheus instruments (S4), shared with no other app in the process. */
  metrics: DossierMetrics;
  /** Stops the worker (runs in flight hand their leases back) and the GraphQL server. */
  stop(): Promise<void>;
};

type InitialContext = { request?: Request; connectionParams?: Record<string, unknown> };

export function createApp({
  db,
  events,
  logger,
  authRequired,
  artifactRetention,
  runtime: runtimeOptions,
  agents = [],
  traceSubscriberBuffer = 1_000,
  mcp: mcpOptions = {},
  limits = DEFAULT_QUERY_LIMITS,
  runQueue,
  corsOrigins = [],
  metricsToken,
  now,
}: {
  db: Database;
  events: EventBus;
  logger: Logger;
  authRequired: boolean;
  artifactRetention?: Parameters<typeof createServices>[0]["artifactRetention"];
  runtime?: Omit<RuntimeOptions, "agents" | "skills" | "mcp">;
  /** Configured agent profiles (over the built-in `researcher`). */
  agents?: AgentProfile[];
  /** Live trace updates that may wait for one slow subscriber before it must resync. */
  traceSubscriberBuffer?: number;
  /**
   * MCP servers: STDIO servers start only the listed programs; HTTP servers reach addresses inside
   * the network only on the listed hosts; replaced connections drain for at most drainTimeoutMs.
   */
  mcp?: {
    stdioCommands?: readonly string[];
    httpAllowedHosts?: readonly string[];
    /** Resolves HTTP servers' host names (tests replace it). */
    resolve?: Resolver;
    drainTimeoutMs?: number;
    connector?: McpConnector;
    secrets?: SecretBox;
  };
  /** Query and request limits (A7). */
  limits?: QueryLimits;
  /**
   * The cross-process run queue (PostgreSQL deployments): admitted runs are announced on it, and
   * this instance's worker, if any, takes its runs from it.
   */
  runQueue?: RunQueue;
  /** Browser origins approved besides the server's own (default none). */
  corsOrigins?: readonly string[];
  /** When set, /metrics answers only `Authorization: Bearer <metricsToken>` (METRICS_TOKEN). */
  metricsToken?: string;
  /** The clock artifact expiry is decided by (tests move it); the system clock by default. */
  now?: () => Date;
}): App {
  const settings = { traceSubscriberBuffer };
  const stdioCommands = mcpOptions.stdioCommands ?? [];
  const httpAllowedHosts = mcpOptions.httpAllowedHosts ?? [];
  const services = createServices({
    prisma: db.prisma,
    events: runQueue ? announcingQueuedRuns(events, runQueue, logger) : events,
    artifactRetention,
    now,
    agents: [...agentProfiles(agents).values()],
    mcp: { stdioCommands, httpAllowedHosts, secrets: mcpOptions.secrets },
  });
  const mcpOutbound = createOutboundHttp({ allowedHosts: httpAllowedHosts, setting: "MCP_HTTP_ALLOWED_HOSTS", resolve: mcpOptions.resolve });
  const skills = new SkillCatalog({ prisma: db.prisma });
  const mcp = new McpRegistry({
    prisma: db.prisma,
    events,
    logger,
    connector: mcpOptions.connector ?? mcpSdkConnector(mcpOutbound.fetch),
    stdioCommands,
    secrets: mcpOptions.secrets,
    drainTimeoutMs: mcpOptions.drainTimeoutMs ?? 120_000,
  });
  const authenticate = createAuthenticator({ principals: services.principals, authRequired });
  const keyRevocations = new KeyRevocations({ prisma: db.prisma, events, logger });
  const authentication = authenticateFirst(authenticate);
  const metrics = createMetrics({ prisma: db.prisma });
  const yoga = createYoga<Record<string, never>, GraphQLContext>({
    schema,
    context: async (initial: InitialContext): Promise<GraphQLContext> => {
      const actor = initial.connectionParams || !initial.request
        ? await authenticate(authorizationFromConnectionParams(initial.connectionParams))
        : await authentication.actorOf(initial.request);
      return { actor, prisma: db.prisma, events, services, settings, capabilities: { skills, mcp } };
    },
    graphqlEndpoint: "/graphql",
    // No origin but the server's own unless listed (see server/cross-site.ts).
    cors: corsFor(corsOrigins),
    // One operation per request: a batch would multiply every limit below by its length.
    batching: false,
    // bodyLimitPlugin refuses an oversized or undeclared body before it is read, and Node's
    // HTTP parser delivers no more than the declared length; Yoga's own limit would pipe every
    // body through a counting stream (about 5 % of a small read's CPU) to learn the same thing.
    maxRequestBodySize: false,
    healthCheckEndpoint: "/health",
    landingPage: false,
    graphiql: { title: "Dossier", subscriptionsProtocol: "WS", defaultQuery: graphiqlDefaultQuery, defaultTabs: graphiqlDefaultTabs },
    logging: {
      debug: (...args) => logger.debug(String(args[0]), { args: args.slice(1) }),
      info: (...args) => logger.info(String(args[0]), { args: args.slice(1) }),
      warn: (...args) => logger.warn(String(args[0]), { args: args.slice(1) }),
      error: (...args) => logger.error(String(args[0]), { error: args.slice(1).map(String), ...stackOf(args[0]) }),
    },
    plugins: [
      jsonPostsOnly("/graphql"),
      authentication.plugin,
      // The live trace viewer page at /traces/<runId>; its data comes through the API itself.
      useTraceViewer(),
      bodyLimitPlugin(limits.maxBodyBytes, metrics.countRejected),
      metricsPlugin({ metrics, token: metricsToken }),
      useKeyRevocation(keyRevocations),
      queryLimitsPlugin(limits, metrics.countRejected),
      useCompiledExecution(),
      useReadinessCheck({
        endpoint: "/ready",
        check: async ({ fetchAPI }) => {
          const readiness = await db.readiness();
          if (!readiness.ready) logger.warn("not ready", { reason: readiness.reason, detail: readiness.detail });
          return fetchAPI.Response.json(
            readiness.ready ? { status: "ready" } : { status: "unavailable", reason: readiness.reason },
            { status: readiness.ready ? 200 : 503 },
          );
        },
      }),
    ],
  });
  const runtime = runtimeOptions
    ? createRuntime(
        { prisma: db.prisma, events, logger, services, metrics },
        {
          ...runtimeOptions,
          agents,
          skills,
          mcp,
          queue: runQueue ?? runtimeOptions.queue,
          instance: { id: db.instanceId, isConnected: (id) => db.isInstanceConnected(id) },
        },
      )
    : undefined;
  runtime?.worker.start();
  return {
    yoga,
    services,
    authenticate,
    limits,
    db,
    events,
    runtime,
    mcp,
    corsOrigins,
    keyRevocations,
    metrics,
    async stop() {
      await runtime?.worker.stop();
      await mcp.close();
      await mcpOutbound.close();
      await keyRevocations.close();
      await runtime?.exporter?.close();
      await yoga.dispose();
    },
  };
}

/**
 * Where a logged error came from. The client only sees "Unexpected error." (masked), so the log
 * is the operator's one record of it: for a resolver's error, the stack of the error it threw.
 */
function stackOf(value: unknown): { stack?: string } {
  const error = value instanceof GraphQLError && value.originalError ? value.originalError : value;
  return error instanceof Error && error.stack ? { stack: error.stack } : {};
}

/**
 * The event publisher of the domain services, which also announces every admitted run on the
 * run queue. Announcing is best effort: a run whose announcement failed is found by the
 * workers' sweep.
 */
function announcingQueuedRuns(events: EventBus, queue: RunQueue, logger: Logger): EventPublisher {
  const publish = (...args: unknown[]) => {
    (events.publish as (...all: unknown[]) => void)(...args);
    if (args[0] === "run:queued") {
      const { runId } = args[1] as { runId: string };
      queue.enqueue([runId]).catch((error: unknown) => logger.warn("announcing a run on the queue failed", { runId, error: String(error) }));
    }
  };
  return { publish: publish as EventBus["publish"] };
}
