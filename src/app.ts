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

export type App = {
  yoga: YogaServerInstance<Record<string, never>, GraphQLContext>;
  services: Services;
  authenticate: Authenticate;
  db: Database;
  events: EventBus;
  /** Present when this instance executes runs (its worker is started). */
  runtime?: Runtime;
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
}: {
  db: Database;
  events: EventBus;
  logger: Logger;
  authRequired: boolean;
  artifactRetention?: Parameters<typeof createServices>[0]["artifactRetention"];
  runtime?: Omit<RuntimeOptions, "agents">;
  /** Configured agent profiles (over the built-in `researcher`). */
  agents?: AgentProfile[];
  /** Live trace updates that may wait for one slow subscriber before it must resync. */
  traceSubscriberBuffer?: number;
}): App {
  const settings = { traceSubscriberBuffer };
  const agentNames = new Set(agentProfiles(agents).keys());
  const services = createServices({ prisma: db.prisma, events, artifactRetention, agentNames });
  const authenticate = createAuthenticator({ principals: services.principals, authRequired });
  const yoga = createYoga<Record<string, never>, GraphQLContext>({
    schema,
    context: async (initial: InitialContext): Promise<GraphQLContext> => {
      const authorization = initial.connectionParams
        ? authorizationFromConnectionParams(initial.connectionParams)
        : initial.request?.headers.get("authorization");
      return { actor: await authenticate(authorization), prisma: db.prisma, events, services, settings };
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
    ? createRuntime({ prisma: db.prisma, events, logger, services }, { ...runtimeOptions, agents })
    : undefined;
  runtime?.worker.start();
  return {
    yoga,
    services,
    authenticate,
    db,
    events,
    runtime,
    async stop() {
      await runtime?.worker.stop();
      await runtime?.exporter?.close();
      await yoga.dispose();
    },
  };
}
