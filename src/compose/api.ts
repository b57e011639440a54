// The API of a server process over its core: GraphQL over HTTP, SSE and WebSocket (Yoga with
// its plugins), how requests and sockets are authenticated, and the key revocations that end
// the subscriptions of a revoked key. The HTTP server (server/http-server.ts) serves it.
import { randomBytes } from "node:crypto";
import { GraphQLError } from "graphql";
import { createYoga, type Plugin, useReadinessCheck, type YogaServerOptions } from "graphql-yoga";
import { authorizationFromConnectionParams, createAuthenticator } from "../graphql/authenticate.js";
import type { GraphQLContext } from "../graphql/context.js";
import { schema } from "../graphql/schema.js";
import type { Logger } from "../logger.js";
import { authenticateFirst } from "../server/authenticate-first.js";
import { useCompiledExecution } from "../server/compiled-execution.js";
import { corsFor, jsonPostsOnly } from "../server/cross-site.js";
import { documentCache } from "../server/document-cache.js";
import { graphqlResponseJsonBodies } from "../server/graphql-response-body.js";
import { automaticPersistedQueries, persistedQueriesStoreOf } from "../server/automatic-persisted-queries.js";
import { useFavicon } from "../server/favicon.js";
import { graphiqlNeverFramed, graphiqlSettings } from "../server/graphiql.js";
import { getParameters } from "../server/get-parameters.js";
import { bodyLimitPlugin, DEFAULT_QUERY_LIMITS, type QueryLimits, queryLimitsPlugin } from "../server/hardening.js";
import { EventStreams } from "../server/event-streams.js";
import { KeyRevocations, useKeyRevocation } from "../server/key-revocations.js";
import { metricsPlugin } from "../server/metrics-plugin.js";
import { type RateLimits, rateLimitPlugin, type TokenBuckets } from "../server/rate-limit.js";
import { endRefused } from "../server/refused-requests.js";
import { privateResponses } from "../server/response-headers.js";
import { guardFailedAuthentications } from "../server/failed-authentications.js";
import { SubscriptionQuota, subscriptionQuotaPlugin } from "../server/subscription-quota.js";
import { type TrustedDocumentsOptions, trustedDocuments } from "../server/trusted-documents.js";
import { endingWhenUnavailable, unavailableResponses } from "../server/unavailable-responses.js";
import { useTraceViewer } from "../trace/viewer/trace-viewer.js";
import { VIEWER_DOCUMENTS } from "../trace/viewer/viewer-documents.js";
import { updateCacheOf } from "../trace/updates/update-cache.js";
import type { ServedApi } from "../server/http-server.js";
import type { Core } from "./core.js";
import { openSignIn, type SignInOptions } from "./sign-in.js";

export type Api = ServedApi & {
  /** Stops watching for revocations and disposes of the GraphQL server. */
  stop(): Promise<void>;
};

export type ApiOptions = {
  logger: Logger;
  authRequired: boolean;
  /** Live trace updates that may wait for one slow subscriber before it must resync. */
  traceSubscriberBuffer?: number;
  /** Query and request limits (A7). */
  limits?: QueryLimits;
  /** Browser origins approved besides the server's own (default none). */
  corsOrigins?: readonly string[];
  /** Origins whose pages may frame the trace viewer (VIEWER_FRAME_ANCESTORS; default none). */
  viewerFrameAncestors?: readonly string[];
  /** When set, /metrics answers only `Authorization: Bearer <metricsToken>` (METRICS_TOKEN). */
  metricsToken?: string;
  /**
   * Whether GraphiQL is served at /graphql (GRAPHIQL). Unset: served unless only trusted
   * documents run. Set with trusted documents only, GraphiQL's requests may send any document.
   */
  graphiql?: boolean;
  /** Trusted documents (TRUSTED_DOCUMENTS_ONLY, TRUSTED_DOCUMENTS_DIR): documentIds are always accepted; `only` refuses other documents. */
  trustedDocuments?: Pick<TrustedDocumentsOptions, "only" | "extra">;
  /** Request rate limits (RATE_LIMIT_PER_MINUTE): the buckets requests and graphql-ws operations draw from; none without. */
  rateLimits?: TokenBuckets;
  /** Per-principal rate limits (RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE): every credential of a principal draws from its bucket too; none without (or without `rateLimits`). */
  principalRateLimits?: TokenBuckets;
  /** Failed authentications per client address (AUTH_FAILURES_PER_MINUTE): past the burst, the address's credentials are refused unread; none: not counted. */
  authFailures?: TokenBuckets;
  /** Subscriptions one API key, and one principal, may hold open at once here (MAX_SUBSCRIPTIONS_PER_KEY; default 500). */
  maxSubscriptionsPerKey?: number;
  /** Subscriptions one access token may hold open at once here (MAX_SUBSCRIPTIONS_PER_TOKEN; default 50): its own, not its key's. */
  maxSubscriptionsPerToken?: number;
  /** The app's own sign-in (AUTH_JWKS_URL and its companions); none without. */
  signIn?: SignInOptions;
};

type InitialContext = { request?: Request; connectionParams?: Record<string, unknown> };

export function createApi(
  core: Pick<Core, "db" | "events" | "services" | "skills" | "mcp" | "metrics" | "now">,
  {
    logger,
    authRequired,
    traceSubscriberBuffer = 1_000,
    limits = DEFAULT_QUERY_LIMITS,
    corsOrigins = [],
    viewerFrameAncestors = [],
    metricsToken,
    rateLimits: requestLimits,
    principalRateLimits,
    authFailures,
    maxSubscriptionsPerKey = 500,
    maxSubscriptionsPerToken = 50,
    signIn: signInOptions,
    ...documents
  }: ApiOptions,
): Api {
  // The value GraphiQL's page carries to be exempt from trusted documents: this process's own.
  const graphiqlSecret = randomBytes(24).toString("base64url");
  const { trusted, graphiql } = documentSettings(documents, graphiqlSecret, core.metrics.countRejected);
  const { db, events, services, metrics, now } = core;
  const settings = { traceSubscriberBuffer, maxResponseBytes: limits.maxResponseBytes, countRejected: metrics.countRejected };
  const capabilities = { skills: core.skills, mcp: core.mcp };
  const rateLimits: RateLimits | undefined = requestLimits && { requests: requestLimits, principals: principalRateLimits };
  const signIn = signInOptions ? openSignIn(db.prisma, signInOptions, now) : undefined;
  const authenticate = createAuthenticator({ principals: services.principals, authRequired, accessTokens: services.accessTokens, signIn: signIn?.tokens });
  const keyRevocations = new KeyRevocations({ prisma: db.prisma, events, logger });
  const eventStreams = new EventStreams();
  const authenticateFrom = guardFailedAuthentications(authenticate, authFailures, metrics.countRejected);
  const authentication = authenticateFirst(authenticateFrom, logger);
  const subscriptionQuota = new SubscriptionQuota(maxSubscriptionsPerKey, maxSubscriptionsPerToken);
  // Parsed documents, kept by text within a byte budget, each principal within a share; only valid ones (server/document-cache.ts).
  const parsed = documentCache({ principalOf: async (request) => (await authentication.actorOf(request)).principalId });
  const yoga = createYoga<Record<string, never>, GraphQLContext>({
    schema,
    context: async (initial: InitialContext): Promise<GraphQLContext> => {
      const actor =
        initial.connectionParams || !initial.request
          ? await authenticate(authorizationFromConnectionParams(initial.connectionParams))
          : await authentication.actorOf(initial.request);
      return { actor, prisma: db.prisma, events, services, now, logger, settings, capabilities };
    },
    ...FIXED_SETTINGS,
    parserAndValidationCache: parsed.settings,
    ...graphiqlSettings(graphiqlSecret),
    // No origin but the server's own unless listed (see server/cross-site.ts).
    cors: corsFor(corsOrigins),
    ...(graphiql ? {} : { graphiql: false }),
    logging: yogaLogging(logger),
    plugins: [
      // No cache keeps an answer, nor hands one origin's to another; no browser sniffs a type.
      privateResponses(),
      jsonPostsOnly("/graphql"),
      graphqlResponseJsonBodies(),
      getParameters(),
      authentication.plugin,
      // Right after authentication: a refused request is answered with its refusal (401, 429,
      // 503) before anything is parsed, and nothing below runs for it (server/refused-requests.ts).
      ...(rateLimits ? [rateLimitPlugin(rateLimits, authentication.actorOf, metrics.countRejected)] : []),
      endRefused(),
      automaticPersistedQueries({
        keeperOf: async (request) => {
          const actor = await authentication.actorOf(request);
          return { principal: actor.principalId, store: persistedQueriesStoreOf(actor) };
        },
        keeps: (query) => !trusted.only || trusted.admits(query),
      }),
      trusted.plugin,
      // The live trace viewer page at /traces/<runId>; its data comes through the API itself.
      useTraceViewer({ frameAncestors: viewerFrameAncestors }),
      graphiqlNeverFramed(),
      useFavicon(),
      bodyLimitPlugin(limits.maxBodyBytes, metrics.countRejected),
      metricsPlugin({ metrics, token: metricsToken }),
      useKeyRevocation(keyRevocations),
      eventStreams.plugin(),
      queryLimitsPlugin(limits, metrics.countRejected),
      parsed.plugin,
      subscriptionQuotaPlugin(subscriptionQuota),
      useCompiledExecution({ compiled: parsed.charge }),
      // A transient database failure is "try again" (SERVICE_UNAVAILABLE, 503), not a masked error.
      unavailableResponses(logger),
      readiness(db, logger),
    ],
  });
  return {
    yoga,
    authenticate: authenticateFrom,
    limits,
    corsOrigins,
    bareGets: { keyless: !authRequired, graphiql },
    keyRevocations,
    eventStreams,
    rateLimits,
    subscriptionQuota,
    trustedDocuments: trusted,
    updateCache: updateCacheOf(db.prisma),
    endingWhenUnavailable: (results, args) => endingWhenUnavailable(results, args, logger),
    metrics,
    now,
    async stop() {
      await keyRevocations.close();
      await yoga.dispose();
      await signIn?.close();
    },
  };
}

/** Yoga's settings that no option changes. */
const FIXED_SETTINGS = {
  graphqlEndpoint: "/graphql",
  // One operation per request: a batch would multiply every limit below by its length.
  batching: false,
  // bodyLimitPlugin refuses an oversized or undeclared body before it is read, and Node's
  // HTTP parser delivers no more than the declared length; Yoga's own limit would pipe every
  // body through a counting stream (about 5 % of a small read's CPU) to learn the same thing.
  maxRequestBodySize: false,
  healthCheckEndpoint: "/health",
  landingPage: false,
  // A request names its document by `documentId` (trusted documents) or sends `query`.
  extraParamNames: ["documentId"],
} satisfies YogaServerOptions<Record<string, never>, GraphQLContext>;

/** Which documents run, and whether GraphiQL is served (GRAPHIQL unset: unless only trusted documents run). */
function documentSettings(
  { graphiql, trustedDocuments: options = { only: false } }: Pick<ApiOptions, "graphiql" | "trustedDocuments">,
  graphiqlSecret: string,
  countRejected: (reason: string) => void,
) {
  const served = graphiql ?? !options.only;
  // The trace viewer's page sends its own documents: the server trusts them as it trusts the SDK's.
  const extra = { ...VIEWER_DOCUMENTS, ...options.extra };
  return { graphiql: served, trusted: trustedDocuments({ ...options, extra, graphiqlExempt: served, graphiqlSecret, countRejected }) };
}

/**
 * /ready: 200 while the database answers, 503 with the reason while it does not. Yoga's plugin
 * tests every request's URL against a URLPattern when its path is not /ready (about 3 % of a
 * workspace read's CPU); its own two cheap checks, `request.url` ending in /ready or the path being
 * /ready, cover everything the pattern matches, so only requests whose URL holds /ready reach it.
 */
function readiness(db: Core["db"], logger: Logger): Plugin {
  const plugin = readinessCheck(db, logger);
  const onRequest = plugin.onRequest!;
  return {
    ...plugin,
    onRequest: (payload) => {
      const { url } = payload.request;
      return url.includes(READY) && (url.endsWith(READY) || payload.url.pathname === READY) ? onRequest(payload) : undefined;
    },
  };
}

const READY = "/ready";

function readinessCheck(db: Core["db"], logger: Logger): Plugin {
  return useReadinessCheck({
    endpoint: READY,
    check: async ({ fetchAPI }) => {
      const readiness = await db.readiness();
      if (!readiness.ready) logger.warn("not ready", { reason: readiness.reason, detail: readiness.detail });
      return fetchAPI.Response.json(readiness.ready ? { status: "ready" } : { status: "unavailable", reason: readiness.reason }, {
        status: readiness.ready ? 200 : 503,
      });
    },
  });
}

/** Yoga's log lines through Dossier's logger. */
function yogaLogging(logger: Logger) {
  return {
    debug: (...args: unknown[]) => logger.debug(String(args[0]), { args: args.slice(1) }),
    info: (...args: unknown[]) => logger.info(String(args[0]), { args: args.slice(1) }),
    warn: (...args: unknown[]) => logger.warn(String(args[0]), { args: args.slice(1) }),
    error: (...args: unknown[]) => logger.error(String(args[0]), { error: args.slice(1).map(String), ...stackOf(args[0]) }),
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
