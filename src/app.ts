// Dossier as a value: services and the GraphQL server over an open database and an event bus.
// main.ts builds one from configuration; tests build as many as they need.
import { createYoga, useReadinessCheck, type YogaServerInstance } from "graphql-yoga";
import type { Database } from "./db/open-database.js";
import type { EventBus } from "./events/topics.js";
import { type Authenticate, authorizationFromConnectionParams, createAuthenticator } from "./graphql/authenticate.js";
import type { GraphQLContext } from "./graphql/context.js";
import { schema } from "./graphql/schema.js";
import type { Logger } from "./logger.js";
import { graphiqlDefaultQuery, graphiqlDefaultTabs } from "./server/graphiql.js";
import { useTraceViewer } from "./server/trace-viewer.js";
import { type AgentProfile, agentProfiles } from "./runtime/agents.js";
import { createRuntime, type Runtime, type RuntimeOptions } from "./runtime/runtime.js";
import { createServices, type Services } from "./services.js";
import { connectMcpSdk } from "./runtime/adapters/mcp-sdk-client.js";
import { McpRegistry } from "./runtime/mcp/mcp-registry.js";
import type { McpConnector } from "./runtime/ports/mcp.js";
import { SkillCatalog } from "./runtime/skills/skill-catalog.js";

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
  /** MCP servers: stdio off unless allowed; replaced connections drain for at most drainTimeoutMs. */
  mcp?: { stdioAllowed?: boolean; drainTimeoutMs?: number; connector?: McpConnector };
}): App {
  const settings = { traceSubscriberBuffer };
  const agentNames = new Set(agentProfiles(agents).keys());
  const stdioAllowed = mcpOptions.stdioAllowed ?? false;
  const services = createServices({ prisma: db.prisma, events, artifactRetention, agentNames, mcpStdioAllowed: stdioAllowed });
  const skills = new SkillCatalog({ prisma: db.prisma });
  const mcp = new McpRegistry({
    prisma: db.prisma,
    events,
    logger,
    connector: mcpOptions.connector ?? connectMcpSdk,
    stdioAllowed,
    drainTimeoutMs: mcpOptions.drainTimeoutMs ?? 120_000,
  });
  const authenticate = createAuthenticator({ principals: services.principals, authRequired });
  const yoga = createYoga<Record<string, never>, GraphQLContext>({
    schema,
    context: async (initial: InitialContext): Promise<GraphQLContext> => {
      const authorization = initial.connectionParams
        ? authorizationFromConnectionParams(initial.connectionParams)
        : initial.request?.headers.get("authorization");
      return { actor: await authenticate(authorization), prisma: db.prisma, events, services, settings, capabilities: { skills, mcp } };
    },
    graphqlEndpoint: "/graphql",
    healthCheckEndpoint: "/health",
    landingPage: false,
    graphiql: { title: "Dossier", subscriptionsProtocol: "WS", defaultQuery: graphiqlDefaultQuery, defaultTabs: graphiqlDefaultTabs },
    logging: {
      debug: (...args) => logger.debug(String(args[0]), { args: args.slice(1) }),
      info: (...args) => logger.info(String(args[0]), { args: args.slice(1) }),
      warn: (...args) => logger.warn(String(args[0]), { args: args.slice(1) }),
      error: (...args) => logger.error(String(args[0]), { error: args.slice(1).map(String) }),
    },
    plugins: [
      // The live trace viewer page at /traces/<runId>; its data comes through the API itself.
      useTraceViewer(),
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
    ? createRuntime({ prisma: db.prisma, events, logger, services }, { ...runtimeOptions, agents, skills, mcp })
    : undefined;
  runtime?.worker.start();
  return {
    yoga,
    services,
    authenticate,
    db,
    events,
    runtime,
    mcp,
    async stop() {
      await runtime?.worker.stop();
      await mcp.close();
      await runtime?.exporter?.close();
      await yoga.dispose();
    },
  };
}
