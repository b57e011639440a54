// A whole Dossier app over a fresh, migrated test database (a copy of the run's template), reached through the SDK either
// in process (yoga.fetch) or over a real socket on port 0.
import { type App, createApp } from "../../src/compose/app.js";
import { randomBytes } from "node:crypto";
import { SecretBox } from "../../src/domain/secret-box.js";
import { createEventBus, type EventBus } from "../../src/events/topics.js";
import { createLogger, type Logger, silentLogger } from "../../src/logger.js";
import { type RunningServer, startHttpServer } from "../../src/server/http-server.js";
import { createClient, type DossierClient } from "../../sdk/client.js";
import type { Database } from "../../src/db/open-database.js";
import { type Backend, openMigratedTestDatabase } from "./databases.js";

/** An in-process event target that can tell how many subscriptions are listening. */
class CountingEventTarget extends EventTarget {
  listeners = 0;
  override addEventListener(...args: Parameters<EventTarget["addEventListener"]>): void {
    this.listeners += 1;
    super.addEventListener(...args);
  }
  override removeEventListener(...args: Parameters<EventTarget["removeEventListener"]>): void {
    this.listeners -= 1;
    super.removeEventListener(...args);
  }
}

export type TestApp = {
  /** How many subscriptions currently listen on the app's event bus. */
  listeners(): number;
  app: App;
  /** An SDK client that calls the app in process. */
  client: DossierClient;
  /** The listening server, when started with { listen: true }. */
  server?: RunningServer;
  /** A new SDK client over the socket (requires { listen: true }), optionally with an API key. */
  connect(apiKey?: string): DossierClient;
  /** An in-process SDK client sending this API key. */
  as(apiKey: string): DossierClient;
  /** Creates a principal and returns its API key. */
  createPrincipal(name: string): Promise<string>;
  close(): Promise<void>;
};

export type TestAppOptions = {
  listen?: boolean;
  /** Default false: keyless requests act as the development principal. */
  authRequired?: boolean;
  artifactRetention?: Parameters<typeof createApp>[0]["artifactRetention"];
  /** Starts an in-process worker executing runs with these options. */
  runtime?: Parameters<typeof createApp>[0]["runtime"];
  agents?: Parameters<typeof createApp>[0]["agents"];
  maxSubscriptionsPerConnection?: number;
  /** Opens the database instead of a fresh one (e.g. createPersistentTestDatabase, or openTestDatabase hearing its statements); the app disposes of it when it closes. */
  database?: () => Promise<{ db: Database; dispose(): Promise<void> }>;
  mcp?: Parameters<typeof createApp>[0]["mcp"];
  corsOrigins?: string[];
  /** Origins whose pages may frame the trace viewer (VIEWER_FRAME_ANCESTORS). */
  viewerFrameAncestors?: string[];
  /** ALLOWED_HOSTS (default: the loopback names the server binds to). */
  allowedHosts?: string[];
  metricsToken?: string;
  /** Where the app logs; silent by default (TEST_LOGS=1: debug lines on stderr). */
  logger?: Logger;
  /** The clock artifact expiry, late tool-call decisions and trace retention are decided by. */
  now?: () => Date;
  /** Trace retention's operator default (TRACE_RETENTION_DAYS, TRACE_RETENTION_MODE) and sweep batches. */
  retention?: Parameters<typeof createApp>[0]["retention"];
  /** Webhook settings; `deliver: true` starts delivering them (none by default). */
  webhooks?: Parameters<typeof createApp>[0]["webhooks"];
  /** GRAPHIQL and trusted documents (TRUSTED_DOCUMENTS_ONLY, TRUSTED_DOCUMENTS_DIR's manifests). */
  graphiql?: boolean;
  trustedDocuments?: Parameters<typeof createApp>[0]["trustedDocuments"];
  /** Request rate limits (RATE_LIMIT_PER_MINUTE's buckets); none by default. */
  rateLimits?: Parameters<typeof createApp>[0]["rateLimits"];
  /** Per-principal rate limits (RATE_LIMIT_PER_PRINCIPAL_PER_MINUTE's buckets); none by default. */
  principalRateLimits?: Parameters<typeof createApp>[0]["principalRateLimits"];
  /** Failed authentications per client address (AUTH_FAILURES_PER_MINUTE's buckets); not counted by default. */
  authFailures?: Parameters<typeof createApp>[0]["authFailures"];
  /** Subscriptions one key, and one principal, may hold open (MAX_SUBSCRIPTIONS_PER_KEY). */
  maxSubscriptionsPerKey?: number;
  /** Subscriptions one access token may hold open (MAX_SUBSCRIPTIONS_PER_TOKEN). */
  maxSubscriptionsPerToken?: number;
  /** The app's own sign-in (AUTH_JWKS_URL and its companions). */
  signIn?: Parameters<typeof createApp>[0]["signIn"];
  /** Open connections per client address and the request timeout of the listening server. */
  connections?: Parameters<typeof startHttpServer>[0]["connections"];
  /** TRUSTED_PROXIES of the listening server: whose X-Forwarded-For names the client. */
  trustedProxies?: string[];
  /** The run queue ready runs are announced on (PostgreSQL deployments); the app does not close it. */
  runQueue?: Parameters<typeof createApp>[0]["runQueue"];
  /** The app's event bus instead of one of its own (Redis shared with another app: two instances); the app does not close it, and `listeners()` does not count it. */
  events?: EventBus;
  /** Runs one principal may have QUEUED (MAX_QUEUED_RUNS_PER_PRINCIPAL; 1,000 by default). */
  maxQueuedRunsPerPrincipal?: number;
  /** Schedules one principal may have (MAX_SCHEDULES_PER_PRINCIPAL; 100 by default). */
  maxSchedulesPerPrincipal?: number;
  /** Live API keys one principal may have (MAX_API_KEYS_PER_PRINCIPAL; 100 by default). */
  maxApiKeysPerPrincipal?: number;
  /** Bytes of artifact content one principal may store (MAX_ARTIFACT_BYTES_PER_PRINCIPAL; 1 GiB by default). */
  maxArtifactBytesPerPrincipal?: number;
  /** Query and response limits (MAX_QUERY_COST, MAX_RESPONSE_BYTES and their companions); the defaults otherwise. */
  limits?: Parameters<typeof createApp>[0]["limits"];
};

export async function startTestApp(
  backend: Backend,
  {
    listen = false,
    authRequired = false,
    artifactRetention,
    runtime,
    agents,
    maxSubscriptionsPerConnection,
    database,
    mcp,
    corsOrigins,
    viewerFrameAncestors,
    allowedHosts,
    metricsToken,
    logger,
    now,
    retention,
    webhooks,
    graphiql,
    trustedDocuments,
    rateLimits,
    principalRateLimits,
    authFailures,
    maxSubscriptionsPerKey,
    maxSubscriptionsPerToken,
    connections,
    trustedProxies,
    signIn,
    runQueue,
    events,
    maxQueuedRunsPerPrincipal,
    maxSchedulesPerPrincipal,
    maxApiKeysPerPrincipal,
    maxArtifactBytesPerPrincipal,
    limits,
  }: TestAppOptions = {},
): Promise<TestApp> {
  const opened: { db: Database; url?: string; dispose(): Promise<void> } = database ? await database() : await openMigratedTestDatabase(backend);
  const { db, dispose } = opened;
  await db.migrate();
  const eventTarget = new CountingEventTarget();
  const app = createApp({
    db,
    events: events ?? createEventBus({ eventTarget }),
    logger: logger ?? (process.env.TEST_LOGS ? createLogger("debug") : silentLogger),
    authRequired,
    artifactRetention,
    runtime,
    agents,
    // A fresh secrets key per app, as an operator's SECRETS_KEY would be; `secrets: undefined` tests without one.
    mcp: { secrets: new SecretBox(randomBytes(32)), ...mcp },
    corsOrigins,
    viewerFrameAncestors,
    metricsToken,
    now,
    retention,
    // On PostgreSQL, webhooks are delivered through pg-boss in the app's own database, as the server does.
    webhooks: webhooks?.deliver && opened.url ? { postgresUrl: opened.url, ...webhooks } : webhooks,
    graphiql,
    trustedDocuments,
    rateLimits,
    principalRateLimits,
    authFailures,
    maxSubscriptionsPerKey,
    maxSubscriptionsPerToken,
    signIn,
    runQueue,
    maxQueuedRunsPerPrincipal,
    maxSchedulesPerPrincipal,
    maxApiKeysPerPrincipal,
    maxArtifactBytesPerPrincipal,
    limits,
  });
  // As the server does at start: admissions then resolve their profile version without a statement.
  await app.services.agentProfiles.load();
  const server = listen
    ? await startHttpServer({ app, port: 0, host: "127.0.0.1", maxSubscriptionsPerConnection, allowedHosts, connections, trustedProxies })
    : undefined;
  const clients: DossierClient[] = [];
  const inProcessFetch = (async (input: string, init?: RequestInit) => app.yoga.fetch(new Request(input, init))) as typeof fetch;
  const client = createClient({ url: "http://dossier.test/graphql", fetch: inProcessFetch });
  return {
    listeners: () => eventTarget.listeners,
    app,
    client,
    server,
    as: (apiKey) => createClient({ url: "http://dossier.test/graphql", fetch: inProcessFetch, headers: bearer(apiKey) }),
    async createPrincipal(name) {
      return (await app.services.principals.createPrincipal({ name })).secret;
    },
    connect(apiKey) {
      if (!server) throw new Error("start the test app with { listen: true } to connect over a socket");
      const socketClient = createClient({ url: server.url, wsUrl: server.wsUrl, headers: bearer(apiKey) });
      clients.push(socketClient);
      return socketClient;
    },
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      await server?.close();
      await app.stop();
      await dispose();
    },
  };
}

const bearer = (apiKey: string | undefined): Record<string, string> => (apiKey ? { authorization: `Bearer ${apiKey}` } : {});
