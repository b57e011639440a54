// Which database failures hand a run back instead of failing it: each one triggered for real on
// PostgreSQL through Dossier's own Prisma client (Prisma 7 over @prisma/adapter-pg) and, for the
// link itself, through a fault-injection proxy — and failures of the work itself stay failures.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../src/db/open-database.js";
import { isTransientDatabaseError } from "../../src/db/transient-errors.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { type FaultProxy, startFaultProxy } from "../support/fault-proxy.js";

/** The error `work` throws (fails the test when it throws none). */
async function thrown(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error("expected an error");
}

const raise = (state: string) => `DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '${state}'; END $$`;

describe.runIf(backends.includes("postgres"))("transient database errors, as Prisma 7 and node-postgres throw them", () => {
  let database: { url: string; drop(): Promise<void> };
  let db: Database;
  let proxy: FaultProxy;
  let proxied: Database;
  let admin: pg.Client;

  beforeAll(async () => {
    database = await createPostgresDatabase();
    db = await openDatabase({ kind: "postgres", url: database.url }, { instanceId: "transient-direct" });
    await db.migrate();
    proxy = await startFaultProxy(database.url);
    proxied = await openDatabase(
      { kind: "postgres", url: proxy.url, timeouts: { connectMs: 500, queryMs: 700, statementMs: 5_000 } },
      { instanceId: "transient-proxied", migrations: [] },
    );
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
  });

  afterAll(async () => {
    proxy?.heal();
    await admin?.end();
    await proxied?.close().catch(() => undefined);
    await proxy?.close();
    await db?.close();
    await database?.drop();
  });

  it("serialization failures, deadlock victims, statement timeouts and terminated sessions are transient", async () => {
    expect(isTransientDatabaseError(await thrown(() => db.prisma.$executeRawUnsafe(raise("40001"))))).toBe(true);
    expect(isTransientDatabaseError(await thrown(() => db.prisma.$transaction((tx) => tx.$executeRawUnsafe(raise("40P01")))))).toBe(true);
    const timedOut = await thrown(() =>
      db.prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe("SET LOCAL statement_timeout = 50");
        await tx.$queryRawUnsafe("SELECT pg_sleep(1)");
      }),
    );
    expect(isTransientDatabaseError(timedOut)).toBe(true);
    const sleeping = thrown(() => db.prisma.$queryRawUnsafe("SELECT pg_sleep(5)"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'dossier transient-direct' AND state = 'active'");
    const terminated = await sleeping;
    expect(String(terminated)).toMatch(/57P01|terminating connection/);
    expect(isTransientDatabaseError(terminated)).toBe(true);
    // The pool recovers: the next query gets a new session.
    await expect(db.prisma.run.count()).resolves.toBe(0);
  });

  it("a real deadlock's victim is transient", async () => {
    await db.prisma.$executeRawUnsafe("CREATE TABLE IF NOT EXISTS lock_pair (id int PRIMARY KEY)");
    await db.prisma.$executeRawUnsafe("INSERT INTO lock_pair VALUES (1), (2) ON CONFLICT DO NOTHING");
    let bothLocked!: () => void;
    let count = 0;
    const barrier = new Promise<void>((resolve) => {
      bothLocked = () => {
        count += 1;
        if (count === 2) resolve();
      };
    });
    const crossing = (first: number, second: number) =>
      db.prisma.$transaction(async (tx) => {
        await tx.$executeRawUnsafe("SELECT 1 FROM lock_pair WHERE id = $1 FOR UPDATE", first);
        bothLocked();
        await barrier;
        await tx.$executeRawUnsafe("SELECT 1 FROM lock_pair WHERE id = $1 FOR UPDATE", second);
      });
    const results = await Promise.allSettled([crossing(1, 2), crossing(2, 1)]);
    const victims = results.filter((result) => result.status === "rejected").map((result) => (result as PromiseRejectedResult).reason);
    expect(victims).toHaveLength(1);
    expect(String(victims[0])).toMatch(/40P01|deadlock/);
    expect(isTransientDatabaseError(victims[0])).toBe(true);
  });

  it("no transaction within maxWait (a full pool) is transient", async () => {
    const holders = Array.from({ length: 10 }, () => db.prisma.$transaction((tx) => tx.$executeRawUnsafe("SELECT pg_sleep(0.8)")));
    const waited = await thrown(() => db.prisma.$transaction((tx) => tx.run.count(), { maxWait: 100 }));
    await Promise.all(holders);
    expect(isTransientDatabaseError(waited)).toBe(true);
  });

  it("a link that hangs, resets or refuses is transient", async () => {
    await expect(proxied.prisma.run.count()).resolves.toBe(0);
    proxy.hang();
    const hung = await thrown(() => proxied.prisma.run.count());
    proxy.heal();
    expect(isTransientDatabaseError(hung)).toBe(true);

    const inFlight = thrown(() => proxied.prisma.$queryRawUnsafe("SELECT pg_sleep(2)"));
    await new Promise((resolve) => setTimeout(resolve, 200));
    proxy.reset();
    expect(isTransientDatabaseError(await inFlight)).toBe(true);

    proxy.refuse();
    const refused = await thrown(() => proxied.prisma.$transaction((tx) => tx.run.count()));
    proxy.heal();
    expect(isTransientDatabaseError(refused)).toBe(true);
    await expect(proxied.prisma.run.count()).resolves.toBe(0);
  });

  it("failures of the work itself are not transient", async () => {
    expect(isTransientDatabaseError(await thrown(() => db.prisma.$executeRawUnsafe(raise("23505"))))).toBe(false);
    expect(isTransientDatabaseError(await thrown(() => db.prisma.$executeRawUnsafe(raise("P0001"))))).toBe(false);
    expect(isTransientDatabaseError(await thrown(() => db.prisma.$queryRawUnsafe("SELECT no_such_column FROM run")))).toBe(false);
    expect(isTransientDatabaseError(new Error("model said no"))).toBe(false);
  });
});
