// An app on a fresh PostgreSQL database whose link the test can fail: for the tests of requests
// and subscriptions the database fails for a moment. Its pool has the timeouts and size a test
// asks for and reaches PostgreSQL directly or through a fault proxy (fault-proxy.ts); the
// operator's log is kept (warnings and errors), and `sql` is a connection of the test's own that
// never goes through the proxy.
import pg from "pg";
import { type Database, type DatabaseTimeouts, openDatabase } from "../../src/db/open-database.js";
import { silentLogger } from "../../src/logger.js";
import { createMigratedPostgresDatabase } from "./databases.js";
import { type FaultProxy, startFaultProxy } from "./fault-proxy.js";
import { startTestApp, type TestApp, type TestAppOptions } from "./test-app.js";
import { waitUntil } from "./wait.js";

/** One line of the operator's log: its level, message and the error it names. */
export type Logged = { level: "warn" | "error"; message: string; error: string };

export type UnavailableApp = {
  t: TestApp | undefined;
  sql: pg.Client | undefined;
  proxy: FaultProxy | undefined;
  /** The database's own URL (not the proxy's). */
  url: string | undefined;
  logged: Logged[];
  /** A statement after which the proxy hangs the link (the next statement hangs); cleared once it did. */
  hangAfter: RegExp | undefined;
  start(
    target: { timeouts: Partial<DatabaseTimeouts>; poolSize?: number },
    viaProxy?: boolean,
    app?: Pick<TestAppOptions, "listen" | "authRequired">,
  ): Promise<{ client: TestApp["client"]; db: Database; sql: pg.Client }>;
  /** Waits until none of the app's sessions runs a statement: whatever it sent has committed or ended. */
  settled(): Promise<void>;
  close(): Promise<void>;
};

/** The harness of one test file; `instance` names the app's sessions in pg_stat_activity. */
export function unavailableApp(instance: string): UnavailableApp {
  let drop: (() => Promise<void>) | undefined;
  const h: UnavailableApp = {
    t: undefined,
    sql: undefined,
    proxy: undefined,
    url: undefined,
    logged: [],
    hangAfter: undefined,
    async start(target, viaProxy = false, app = {}) {
      const database = await createMigratedPostgresDatabase();
      drop = database.drop;
      h.url = database.url;
      if (viaProxy) h.proxy = await startFaultProxy(database.url);
      const proxy = h.proxy;
      let db: Database | undefined;
      const log = (level: Logged["level"]) => (message: string, fields?: Record<string, unknown>) =>
        void h.logged.push({ level, message, error: String(fields?.error) });
      h.t = await startTestApp("postgres", {
        ...app,
        logger: { ...silentLogger, warn: log("warn"), error: log("error") },
        database: async () => {
          db = await openDatabase(
            { kind: "postgres", url: proxy?.url ?? database.url, ...target },
            {
              instanceId: instance,
              migrations: [],
              onQuery: (statement) => {
                if (h.hangAfter?.test(statement)) {
                  h.hangAfter = undefined;
                  proxy!.hang();
                }
              },
            },
          );
          return { db, dispose: () => db!.close() };
        },
      });
      h.sql = new pg.Client({ connectionString: database.url });
      await h.sql.connect();
      return { client: h.t.client, db: db!, sql: h.sql };
    },
    settled: () =>
      waitUntil(async () => {
        const { rows } = await h.sql!.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'", [
          `dossier ${instance}`,
        ]);
        return rows[0].n === 0 ? true : undefined;
      }, 15_000).then(() => undefined),
    async close() {
      h.logged = [];
      h.hangAfter = undefined;
      h.proxy?.heal();
      await h.sql?.query("ROLLBACK").catch(() => undefined);
      await h.sql?.end();
      await h.t?.close();
      await h.proxy?.close();
      await drop?.();
      h.t = h.sql = h.proxy = h.url = drop = undefined;
    },
  };
  return h;
}
