// A whole Dossier server process as one value — its core and its API — over an open database and
// an event bus, without the HTTP server. Tests and benchmarks build as many as they need; the
// server's own entry point composes the same parts from configuration (server.ts).
import { type Api, type ApiOptions, createApi } from "./api.js";
import { type Core, type CoreOptions, createCore } from "./core.js";

export type App = Omit<Core, "stop"> &
  Omit<Api, "stop"> & {
    /** Stops the core (its worker hands runs in flight back), then the API. */
    stop(): Promise<void>;
  };

export type AppOptions = CoreOptions & ApiOptions;

export function createApp({
  traceSubscriberBuffer,
  limits,
  corsOrigins,
  viewerFrameAncestors,
  metricsToken,
  authRequired,
  graphiql,
  trustedDocuments,
  rateLimits,
  principalRateLimits,
  authFailures,
  maxSubscriptionsPerKey,
  maxSubscriptionsPerToken,
  signIn,
  ...options
}: AppOptions): App {
  const core = createCore(options);
  const api = createApi(core, {
    logger: options.logger,
    authRequired,
    traceSubscriberBuffer,
    limits,
    corsOrigins,
    viewerFrameAncestors,
    metricsToken,
    graphiql,
    trustedDocuments,
    rateLimits,
    principalRateLimits,
    authFailures,
    maxSubscriptionsPerKey,
    maxSubscriptionsPerToken,
    signIn,
  });
  return {
    ...core,
    ...api,
    async stop() {
      await core.stop();
      await api.stop();
    },
  };
}
