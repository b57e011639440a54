// The server process's composition root: configuration → infrastructure (database, events, run
// queue) → core → API → HTTP server. It owns graceful shutdown: on SIGTERM/SIGINT it stops
// accepting connections, lets requests in flight finish, closes sockets, hands runs in flight back
// for another worker, then closes the queue, Redis and the database.
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { DossierMetrics } from "../metrics/dossier-metrics.js";
import { sealStoredUrls } from "../domain/sealed-url.js";
import { startHttpServer } from "../server/http-server.js";
import { createApi } from "./api.js";
import { createCore } from "./core.js";
import {
  mcpSettings,
  modelFor,
  openAuthFailures,
  openInfrastructure,
  openPrincipalRateLimits,
  openRateLimits,
  runtimeSettings,
  logCommandContainment,
  stopOnSignals,
} from "./infrastructure.js";

/** Starts the server; its metrics are returned for what the entry point counts itself. */
export async function startServer({ config, logger }: { config: Config; logger: Logger }): Promise<{ metrics: DossierMetrics }> {
  const infrastructure = await openInfrastructure(config, logger);
  const { db, events, runQueue } = infrastructure;
  const rateLimits = await openRateLimits(config, logger);
  const principalRateLimits = await openPrincipalRateLimits(config, logger);
  const authFailures = await openAuthFailures(config, logger);
  const mcp = mcpSettings(config, logger);
  const core = createCore({
    db,
    events,
    logger,
    agents: config.agents,
    mcp,
    runQueue,
    webhooks: {
      ...config.webhooks,
      deliver: true,
      ...(config.database.kind === "postgres" && { postgresUrl: config.database.url, postgresTimeouts: config.database.timeouts }),
    },
    retention: config.retention,
    maxQueuedRunsPerPrincipal: config.maxQueuedRunsPerPrincipal,
    maxSchedulesPerPrincipal: config.maxSchedulesPerPrincipal,
    maxApiKeysPerPrincipal: config.maxApiKeysPerPrincipal,
    maxArtifactBytesPerPrincipal: config.maxArtifactBytesPerPrincipal,
    runtime: config.inProcessWorker ? runtimeSettings(config, await modelFor(config, logger)) : undefined,
  });
  const api = createApi(core, {
    logger,
    authRequired: config.authRequired,
    corsOrigins: config.corsOrigins,
    viewerFrameAncestors: config.viewerFrameAncestors,
    metricsToken: config.metricsToken,
    traceSubscriberBuffer: config.traceSubscriberBuffer,
    limits: config.limits,
    graphiql: config.graphiql,
    trustedDocuments: config.trustedDocuments,
    rateLimits,
    principalRateLimits,
    authFailures,
    maxSubscriptionsPerKey: config.maxSubscriptionsPerKey,
    maxSubscriptionsPerToken: config.maxSubscriptionsPerToken,
    signIn: config.signIn,
  });
  // Webhook and MCP server URLs stored in clear by an older version are sealed now (domain/sealed-url.ts).
  if (mcp.secrets) {
    const sealed = await sealStoredUrls(db.prisma, mcp.secrets);
    if (sealed > 0) logger.info(`sealed ${sealed} webhook and MCP server URLs stored in clear by an older version`);
  }
  // Every agent profile whose definition changed since the last start becomes a new version now.
  await core.services.agentProfiles.load();
  warnAboutSettings(config, logger);
  if (config.inProcessWorker) await logCommandContainment(config, logger);

  let server: Awaited<ReturnType<typeof startHttpServer>> | undefined;
  stopOnSignals(logger, config.shutdownTimeoutMs, async (step) => {
    await step("the HTTP server", async () => server?.close());
    await step("the worker and the services (runs in flight are handed back)", () => core.stop());
    await step("the API", () => api.stop());
    await step("the rate limits", async () => rateLimits?.close?.());
    await step("the principals' rate limits", async () => principalRateLimits?.close?.());
    await step("the authentication failure counts", async () => authFailures?.close?.());
    await infrastructure.close(step);
  });

  server = await startHttpServer({
    app: api,
    port: config.port,
    host: config.host,
    allowedHosts: config.allowedHosts,
    maxSubscriptionsPerConnection: config.maxSubscriptionsPerConnection,
    connections: config.connections,
    trustedProxies: config.trustedProxies,
  });
  logger.info(`Dossier is listening: GraphiQL at ${server.url}`, { url: server.url, port: server.port });
  return { metrics: core.metrics };
}

/** Settings an operator should know are in force. */
function warnAboutSettings(config: Config, logger: Logger): void {
  if (!config.inProcessWorker) logger.info("IN_PROCESS_WORKER=false: this server executes no runs; start worker processes (npm run worker)");
  if (config.capabilities.commands.allowed) {
    logger.warn("COMMANDS_ALLOWED=true: runs may execute programs in their sandbox folders as this server's user");
  }
  if (config.trustedDocuments.only) {
    const extra = Object.keys(config.trustedDocuments.extra).length;
    logger.info(`TRUSTED_DOCUMENTS_ONLY=true: only the SDK's documents${extra ? ` and ${extra} from TRUSTED_DOCUMENTS_DIR` : ""} run`);
    if (config.graphiql) logger.warn("GRAPHIQL=true: the GraphiQL page this server serves may run any document, for whoever can open it");
  }
  if (!config.authRequired) {
    logger.warn("AUTH_REQUIRED=false: requests without an API key act as the development principal");
  }
}
