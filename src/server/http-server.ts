// One HTTP server for everything: GraphQL over HTTP and SSE (Yoga), graphql-ws on the same
// path, GraphiQL, the trace viewer page (/traces/<runId>), /favicon.ico, /health and /ready.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type ExecutionArgs, type ExecutionResult, GraphQLError } from "graphql";
import { useServer } from "graphql-ws/use/ws";
import { isTransientDatabaseError } from "../db/transient-errors.js";
import { WebSocketServer } from "ws";
import type { YogaServerInstance } from "graphql-yoga";
import { authorizationFromConnectionParams, isSignInUnavailable } from "../graphql/authenticate.js";
import type { GraphQLContext } from "../graphql/context.js";
import { SharedSubscriptionResults } from "../trace/updates/shared-subscription-results.js";
import type { UpdateCache } from "../trace/updates/update-cache.js";
import type { EventStreams } from "./event-streams.js";
import type { DossierMetrics } from "../metrics/dossier-metrics.js";
import { guardHosts, hostAllowed, isLoopbackAddress, loopbackHostsOf, MISDIRECTED_MESSAGE } from "./allowed-hosts.js";
import { clientAddressOf, recordClientAddresses, TrustedProxies } from "./client-address.js";
import { capConnectionsPerClient, type ConnectionLimits, DEFAULT_CONNECTION_LIMITS, serverOptions, TOO_MANY_CONNECTIONS } from "./client-connections.js";
import { guardPages, upgradeAllowed } from "./cross-site.js";
import { AUTH_FLOOD_CLOSE_CODE, type AuthenticateFrom, isAuthenticationFlood } from "./failed-authentications.js";
import { type QueryLimits, subscriptionRefusal } from "./hardening.js";
import type { RateLimits } from "./rate-limit.js";
import { closingOf } from "./closing.js";
import { refusalClose } from "./close-reasons.js";
import { collectWhenQuiet } from "./idle-collection.js";
import { OPEN, type Socket, SocketCredentials, socketClosing } from "./socket-credentials.js";
import { SocketShares } from "./socket-shares.js";
import type { SubscriptionQuota } from "./subscription-quota.js";
import { KEY_REVOKED_MESSAGE, type KeyRevocations } from "./key-revocations.js";
import { answerClientErrors, PRIVATE_HEADERS, privateUpgradeRefusals, withPrivateHeaders } from "./response-headers.js";
import type { SocketOperation, TrustedDocuments } from "./trusted-documents.js";

export type RunningServer = {
  /** e.g. http://127.0.0.1:4000/graphql */
  url: string;
  wsUrl: string;
  port: number;
  /** Trace-update responses executed once and shared by their subscribers, so far. */
  sharedSubscriptionExecutions(): number;
  /** graphql-ws sockets acknowledged and not yet closed. */
  openSockets(): number;
  /** Closes the server; closing it again waits for the same close. */
  close(): Promise<void>;
};

/** What the HTTP server serves: the API of a server process (compose/api.ts). */
export type ServedApi = {
  yoga: YogaServerInstance<Record<string, never>, GraphQLContext>;
  /** Authenticates a credential from a client address (one that failed too often is refused unread). */
  authenticate: AuthenticateFrom;
  /** The request limits every transport applies (A7). */
  limits: QueryLimits;
  /** The browser origins approved besides the server's own (CORS_ORIGINS); WebSocket upgrades are held to them too. */
  corsOrigins: readonly string[];
  /** Whether a request without a credential acts as the development principal, and whether GraphiQL's page is served (cross-site.ts guardPages). */
  bareGets: { keyless: boolean; graphiql: boolean };
  /** The subscriptions served over HTTP, whose connections the server that serves them cuts when it closes. */
  eventStreams: Pick<EventStreams, "cut">;
  /** Ends subscriptions whose API key is revoked (WebSocket connections are closed here). */
  keyRevocations: KeyRevocations;
  /** The cache trace updates' shared responses and reads live in (one per database). */
  updateCache: UpdateCache;
  /** Ends a shared subscription's results with SERVICE_UNAVAILABLE once the database fails for a moment, as the pipeline does every other's. */
  endingWhenUnavailable: (results: AsyncIterable<ExecutionResult>, args: ExecutionArgs) => AsyncIterable<ExecutionResult>;
  /** This process's Prometheus instruments (WebSocket subscriptions are counted in them here). */
  metrics: DossierMetrics;
  /** Which documents run, and what a `documentId` names (graphql-ws operations are resolved here). */
  trustedDocuments: Pick<TrustedDocuments, "resolveSocketOperation">;
  /** Rate limits: every graphql-ws operation takes a token when it starts, its credential's and its principal's (RATE_LIMIT_PER_MINUTE). */
  rateLimits?: RateLimits;
  /** Subscriptions per API key and per principal (MAX_SUBSCRIPTIONS_PER_KEY): graphql-ws ones are counted here. */
  subscriptionQuota: SubscriptionQuota;
  /** The clock tokens expire by: a socket opened with one closes then. */
  now: () => Date;
};

type Enveloped = ReturnType<ServedApi["yoga"]["getEnveloped"]>;

/** Why a socket whose credentials could not be checked is closed (with 1013, try again later). */
export const DATABASE_UNAVAILABLE_REASON = "the database failed for a moment; try again";

/** Open sockets' operations, counted at scrape time: nothing to keep in step by hand. */
type OpenSockets = Set<{ subscriptions: Record<string, unknown> }>;

export async function startHttpServer({
  app,
  port,
  host,
  maxSubscriptionsPerConnection = 50,
  allowedHosts = isLoopbackAddress(host) ? loopbackHostsOf(host) : undefined,
  connections = DEFAULT_CONNECTION_LIMITS,
  trustedProxies = [],
}: {
  app: ServedApi;
  port: number;
  host: string;
  /**
   * The host names requests may be addressed to (ALLOWED_HOSTS; see server/allowed-hosts.ts).
   * Default: the loopback names on a loopback address, every name elsewhere.
   */
  allowedHosts?: readonly string[];
  /** Operations one WebSocket may have open at once; more are refused with an error. */
  maxSubscriptionsPerConnection?: number;
  /** Open connections per client address, and how long a request may take to arrive. */
  connections?: ConnectionLimits;
  /** The proxies whose X-Forwarded-For names the client (TRUSTED_PROXIES: addresses and CIDR ranges; see server/client-address.ts). */
  trustedProxies?: readonly string[];
}): Promise<RunningServer> {
  const { yoga } = app;
  const httpServer: Server = createServer(serverOptions(connections));
  // Every request's client address is worked out before anything handles it (client-address.ts).
  const trusted = new TrustedProxies(trustedProxies);
  recordClientAddresses(httpServer, trusted);
  const clients = capConnectionsPerClient(httpServer, connections, trusted);
  // A rebound name gets 421; another site's page gets 403 at the GraphQL endpoint (cross-site.ts).
  // Every response, these refusals included, says no-store, Vary: Origin and nosniff (response-headers.ts).
  const guarded = clients.forwarded(guardHosts(guardPages(yoga, yoga.graphqlEndpoint, app.corsOrigins, allowedHosts, app.bareGets), allowedHosts));
  httpServer.on("request", withPrivateHeaders(guarded));
  const closing = closingOf(httpServer, { cutStreams: (requests) => app.eventStreams.cut(requests) });
  answerClientErrors(httpServer);
  privateUpgradeRefusals(httpServer);
  // A WebSocket message is held to the same size as an HTTP request body, before anything parses it.
  const wsServer = new WebSocketServer({
    server: httpServer,
    path: yoga.graphqlEndpoint,
    maxPayload: app.limits.maxBodyBytes,
    // A rebound name gets 421 like any HTTP request; a page on another origin may not open a
    // socket that carries the browser's credentials.
    verifyClient: ({ req }: { req: IncomingMessage }, done: (allowed: boolean, code?: number, message?: string, headers?: Record<string, string>) => void) => {
      if (!hostAllowed(req.headers.host, allowedHosts)) return done(false, 421, MISDIRECTED_MESSAGE, PRIVATE_HEADERS);
      if (!upgradeAllowed(req, app.corsOrigins, allowedHosts)) return done(false, 401, "Unauthorized", PRIVATE_HEADERS);
      // Through a trusted proxy, the socket counts against its client's connections from here.
      if (!clients.upgradeAllowed(req)) return done(false, 429, TOO_MANY_CONNECTIONS, PRIVATE_HEADERS);
      done(true);
    },
  });
  // Shared responses and the updates' own reads (SSE, other selections) live in one cache.
  const sharedResults = new SharedSubscriptionResults({ cache: app.updateCache, ending: app.endingWhenUnavailable });
  const sockets: OpenSockets = new Set();
  const stopCounting = app.metrics.countWsSubscriptions(() => [...sockets].reduce((sum, ctx) => sum + Object.keys(ctx.subscriptions).length, 0));
  // ws re-emits the HTTP server's errors; listen() already reports a failed start (a port in use)
  // as one error, so the WebSocket server's copy must not print its own trace or crash the process.
  // graphql-ws logs and rethrows any error on its server, hence it is attached once listening.
  const reportedByListen = () => {};
  wsServer.on("error", reportedByListen);
  await listen(httpServer, port, host);
  wsServer.off("error", reportedByListen);
  const wsHandle = serveGraphqlWs({ app, wsServer, sockets, sharedResults, maxSubscriptionsPerConnection });
  // Quiet periods give back what busy ones (and the start) left in V8's young generation.
  const idle = collectWhenQuiet(httpServer, { openSockets: () => wsServer.clients.size });
  const address = httpServer.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}${yoga.graphqlEndpoint}`,
    wsUrl: `ws://${shownHost}:${address.port}${yoga.graphqlEndpoint}`,
    port: address.port,
    sharedSubscriptionExecutions: () => sharedResults.executions,
    openSockets: () => sockets.size,
    close() {
      closed ??= (async () => {
        idle.stop();
        stopCounting();
        await wsHandle.dispose();
        await new Promise<void>((resolve) => wsServer.close(() => resolve()));
        // Event streams are cut at once; other requests in flight get a moment to finish (closing.ts).
        await closing.close();
      })();
      return closed;
    },
  };
}

function listen(httpServer: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    httpServer.once("error", reject);
    httpServer.listen(port, host, () => {
      httpServer.off("error", reject);
      resolve();
    });
  });
}

/** graphql-ws on the WebSocket server: authenticated like HTTP, with a cap on operations per socket. */
function serveGraphqlWs({
  app,
  wsServer,
  sockets,
  sharedResults,
  maxSubscriptionsPerConnection,
}: {
  app: ServedApi;
  wsServer: WebSocketServer;
  sockets: OpenSockets;
  sharedResults: SharedSubscriptionResults;
  maxSubscriptionsPerConnection: number;
}) {
  const shares = new SocketShares(app.rateLimits, app.subscriptionQuota);
  const credentials = new SocketCredentials(app.now);
  return useServer<Record<string, unknown>, { request: unknown; socket: unknown }>(
    {
      // Subscriptions are authorised like queries. A refused key closes the socket with 4401
      // (which clients do not retry) and the same message an HTTP request would get, an
      // unexpected failure with 4500 and nothing of it (close-reasons.ts); a key
      // revoked while the socket is open closes it with 4403, an expired token with 4401
      // "token expired" (socket-credentials.ts). An address that failed to authenticate too often
      // has its connections closed with 4429 before their credentials are looked up.
      onConnect: async (ctx) => {
        const socket = ctx.extra.socket as Socket;
        try {
          const address = clientAddressOf(ctx.extra.request as IncomingMessage);
          const actor = await app.authenticate(authorizationFromConnectionParams(ctx.connectionParams), address);
          // The client may have left while its credential was checked: graphql-ws has run onClose
          // for it already, so nothing registered for it now would ever be given back.
          if (socket.readyState !== OPEN) return false;
          shares.connected(ctx, actor);
          sockets.add(ctx);
          if (actor.keyId && socket.readyState === OPEN)
            socket.once(
              "close",
              app.keyRevocations.watch(actor.keyId, () => socket.close(4403, KEY_REVOKED_MESSAGE)),
            );
          return credentials.opened(ctx, socket, actor);
        } catch (error) {
          // The database failing for a moment refuses nothing: 1013 (try again later), which
          // clients retry, and nothing of the failure itself. Nor do the identity provider's keys
          // that cannot be read for a moment (HTTP's 503 SIGN_IN_UNAVAILABLE).
          if (isTransientDatabaseError(error)) socket.close(1013, DATABASE_UNAVAILABLE_REASON);
          else if (isSignInUnavailable(error)) socket.close(1013, error.message);
          else if (isAuthenticationFlood(error)) socket.close(AUTH_FLOOD_CLOSE_CODE, error.message);
          else {
            const { code, reason } = refusalClose(error);
            socket.close(code, reason);
          }
          return false;
        }
      },
      onClose: (ctx) => {
        sockets.delete(ctx);
        shares.release(ctx);
      },
      onComplete: (ctx, id) => shares.release(ctx, id),
      // Nothing is sent once the socket's credential has expired, however late its timer (a
      // keepalive ping included: it closes the socket instead).
      onNext: (ctx) => void credentials.ended(ctx),
      onError: (ctx) => void credentials.ended(ctx),
      onPing: (ctx) => void credentials.ended(ctx),
      execute: (args) => (args.rootValue as Enveloped).execute(args),
      subscribe: (args) =>
        sharedResults.subscribe(args, sharingKey((args.contextValue as GraphQLContext).actor), (fallback) =>
          (fallback.rootValue as Enveloped).subscribe(fallback),
        ),
      onSubscribe: async (ctx, id, params) => {
        if (credentials.ended(ctx)) return [socketClosing()];
        // Every operation takes a token when it starts (a subscription once, not per update).
        const limited = await shares.start(ctx, clientAddressOf(ctx.extra.request as IncomingMessage));
        if (limited) return [limited];
        // graphql-ws has already registered this operation in ctx.subscriptions when onSubscribe runs.
        if (Object.keys(ctx.subscriptions).length > maxSubscriptionsPerConnection) {
          return [
            new GraphQLError(`This connection already has ${maxSubscriptionsPerConnection} subscriptions open; close one first.`, {
              extensions: { code: "TOO_MANY_SUBSCRIPTIONS" },
            }),
          ];
        }
        // A trusted document's id in place of its text; with TRUSTED_DOCUMENTS_ONLY, nothing else.
        const query = app.trustedDocuments.resolveSocketOperation(params as SocketOperation, ctx.connectionParams);
        if (query instanceof GraphQLError) return [query];
        let prepared: Awaited<ReturnType<typeof prepareOperation>>;
        try {
          prepared = await prepareOperation(app.yoga, { ...ctx, req: ctx.extra.request, socket: ctx.extra.socket, params: { ...params, query } });
        } catch (error) {
          // Each operation authenticates again: a credential refused now (expired, revoked) ends the socket.
          if (!(error instanceof GraphQLError)) throw error;
          if (error.extensions.code === "UNAUTHENTICATED") credentials.refused(ctx, error);
          return [error];
        }
        if (Array.isArray(prepared)) return prepared;
        // Page sizes and cost, before a subscription is shared or started: a shared one's
        // responses are executed outside Yoga's pipeline, where the limits plugin never sees them.
        const tooCostly = subscriptionRefusal(prepared, app.limits, app.metrics.countRejected);
        if (tooCostly) return [tooCostly];
        // Its credential may have expired while it was authenticated and validated.
        if (credentials.ended(ctx)) return [socketClosing()];
        // A subscription holds a place of its key's and principal's share until it completes.
        const full = shares.hold(ctx, id, prepared, (prepared.contextValue as GraphQLContext).actor);
        return full ? [full] : prepared;
      },
    },
    wsServer,
  );
}

/**
 * Who may share a subscription's results: the callers of a principal with the same rights — the
 * same access token (its grants shape what it sees), or API keys and sign-ins with the same scopes
 * (they shape what a run's viewerOperations lists) and the same run caps (they shape which keys
 * Principal.apiKeys shows). Keys of the same rights share, so an agent's and a page's keys watching
 * one trace cost one execution an update; callers whose rights differ in anything never share.
 */
const sharingKey = (actor: GraphQLContext["actor"]) =>
  JSON.stringify([
    actor.principalId,
    actor.access?.tokenId ?? null,
    actor.scopes ? [...actor.scopes].sort() : null,
    actor.runCaps ? Object.entries(actor.runCaps).sort(([a], [b]) => a.localeCompare(b)) : null,
  ]);

/** Parses and validates one operation of a socket; its errors are the operation's, not the socket's. */
async function prepareOperation(
  yoga: ServedApi["yoga"],
  initial: Record<string, unknown> & { params: { query: string; operationName?: string | null; variables?: Record<string, unknown> | null } },
) {
  const enveloped = yoga.getEnveloped(initial);
  const { params } = initial;
  let document: ReturnType<Enveloped["parse"]>;
  try {
    // The parser enforces the token limit: a refusal is the operation's error, not the socket's.
    document = enveloped.parse(params.query);
  } catch (error) {
    if (error instanceof GraphQLError) return [error];
    throw error;
  }
  const args = {
    schema: enveloped.schema,
    operationName: params.operationName,
    document,
    variableValues: params.variables,
    contextValue: await enveloped.contextFactory(),
    rootValue: enveloped,
  };
  const errors = enveloped.validate(args.schema, args.document);
  return errors.length > 0 ? errors : args;
}
