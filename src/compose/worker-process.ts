// The worker process's composition root (S2): executes runs taken from the PostgreSQL job queue
// and serves no API. It composes the same core as a server (services, skills, MCP registry,
// runtime) and no GraphQL at all; /metrics is served on METRICS_PORT when set. Stopping it hands
// every run in flight back, so another worker resumes it at once instead of waiting for the lease.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { DossierMetrics } from "../metrics/dossier-metrics.js";
import { guardHosts } from "../server/allowed-hosts.js";
import { scrapeAllowed } from "../server/metrics-plugin.js";
import { answerClientErrors, withPrivateHeaders } from "../server/response-headers.js";
import type { ModelPort } from "../runtime/ports/model.js";
import type { Tool } from "../runtime/ports/tool.js";
import { createCore } from "./core.js";
import { logCommandContainment, mcpSettings, modelFor, openInfrastructure, runtimeSettings, type StopStep } from "./infrastructure.js";

export class WorkerNeedsPostgresError extends Error {
  constructor() {
    super("A worker process needs DATABASE_URL (PostgreSQL): the embedded database belongs to one process, whose in-process worker executes its runs.");
    this.name = "WorkerNeedsPostgresError";
  }
}

export type WorkerProcess = {
  workerId: string;
  /** The /metrics port, when METRICS_PORT is set (0 picks a free one). */
  metricsPort?: number;
  /** The process's metrics (what the entry point counts itself goes there too). */
  metrics: DossierMetrics;
  /** `step` names each step (stopOnSignals). */
  stop(step?: StopStep): Promise<void>;
};

export async function startWorkerProcess({
  config,
  logger,
  model,
  extraTools,
}: {
  config: Config;
  logger: Logger;
  /** Replaces the configured model (tests). */
  model?: ModelPort;
  /** Tools offered to every run over the built-ins (tests, integrations). */
  extraTools?: Tool[];
}): Promise<WorkerProcess> {
  if (config.database.kind !== "postgres") throw new WorkerNeedsPostgresError();
  const infrastructure = await openInfrastructure(config, logger);
  const core = createCore({
    db: infrastructure.db,
    events: infrastructure.events,
    logger,
    agents: config.agents,
    mcp: mcpSettings(config, logger),
    runQueue: infrastructure.runQueue,
    retention: config.retention,
    // Its scheduler's fires are admitted within it.
    maxQueuedRunsPerPrincipal: config.maxQueuedRunsPerPrincipal,
    runtime: { ...runtimeSettings(config, model ?? (await modelFor(config, logger))), extraTools },
  });
  const metricsServer =
    config.worker.metricsPort === undefined
      ? undefined
      : await serveMetrics(core.metrics, { port: config.worker.metricsPort, host: config.host, token: config.metricsToken, allowedHosts: config.allowedHosts });
  const workerId = core.runtime!.worker.workerId;
  logger.info("worker started", { worker: workerId, metricsPort: metricsServer?.port });
  await logCommandContainment(config, logger);
  return {
    workerId,
    metricsPort: metricsServer?.port,
    metrics: core.metrics,
    async stop(step: StopStep = (_what, work) => work()) {
      await step("the metrics server", () => new Promise<void>((resolve) => (metricsServer ? metricsServer.server.close(() => resolve()) : resolve())));
      await step("the worker and the services (runs in flight are handed back)", () => core.stop());
      await infrastructure.close(step);
    },
  };
}

/**
 * /metrics and /health. Without METRICS_TOKEN, /metrics answers only the names the API answers to
 * (ALLOWED_HOSTS): a rebound name gets 421, as at the API. With the token a page cannot send it, so
 * any Host is served — probes and scrapers address a pod by its IP — and /health, which tells
 * nothing, answers any Host.
 */
async function serveMetrics(
  metrics: DossierMetrics,
  { port, host, token, allowedHosts }: { port: number; host: string; token?: string; allowedHosts: readonly string[] | undefined },
): Promise<{ server: Server; port: number }> {
  const handler = (request: IncomingMessage, response: ServerResponse) => {
    if (request.method === "GET" && request.url === "/metrics" && !scrapeAllowed(request.headers.authorization, token)) {
      response.writeHead(401, { "www-authenticate": "Bearer" }).end("Unauthorized: send Authorization: Bearer <METRICS_TOKEN>");
    } else if (request.method === "GET" && request.url === "/metrics") {
      metrics
        .render()
        .then((body) => response.writeHead(200, { "content-type": metrics.contentType }).end(body))
        .catch((error: unknown) => response.writeHead(500).end(String(error)));
    } else if (request.url === "/health") {
      response.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
    } else {
      response.writeHead(404).end();
    }
  };
  const guarded = guardHosts(handler, allowedHosts);
  // Its answers, refusals included, are never stored nor sniffed, as the API's are (server/response-headers.ts).
  const server = createServer(withPrivateHeaders((request, response) => (token || request.url === "/health" ? handler : guarded)(request, response)));
  answerClientErrors(server);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
