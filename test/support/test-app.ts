// A whole Dossier app over a fresh, migrated test database, reached through the SDK either
// in process (yoga.fetch) or over a real socket on port 0.
import { type App, createApp } from "../../src/app.js";
import { createEventBus } from "../../src/events/topics.js";
import { createLogger, silentLogger } from "../../src/logger.js";
import { type RunningServer, startHttpServer } from "../../src/server/http-server.js";
import { createClient, type DossierClient } from "../../sdk/client.js";
import { type Backend, openTestDatabase } from "./databases.js";

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
  /** A new SDK client over the socket (requires { listen: true }). */
  connect(): DossierClient;
  close(): Promise<void>;
};

export async function startTestApp(backend: Backend, { listen = false } = {}): Promise<TestApp> {
  const { db, dispose } = await openTestDatabase(backend);
  await db.migrate();
  const eventTarget = new CountingEventTarget();
  const app = createApp({ db, events: createEventBus({ eventTarget }), logger: process.env.TEST_LOGS ? createLogger("debug") : silentLogger });
  const server = listen ? await startHttpServer({ app, port: 0, host: "127.0.0.1" }) : undefined;
  const clients: DossierClient[] = [];
  const inProcessFetch = (async (input: string, init?: RequestInit) => app.yoga.fetch(new Request(input, init))) as typeof fetch;
  const client = createClient({ url: "http://dossier.test/graphql", fetch: inProcessFetch });
  return {
    listeners: () => eventTarget.listeners,
    app,
    client,
    server,
    connect() {
      if (!server) throw new Error("start the test app with { listen: true } to connect over a socket");
      const socketClient = createClient({ url: server.url, wsUrl: server.wsUrl });
      clients.push(socketClient);
      return socketClient;
    },
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      await server?.close();
      await app.yoga.dispose();
      await dispose();
    },
  };
}
