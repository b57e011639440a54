// Opens Dossier's database: PostgreSQL when configured, otherwise the embedded PGlite.
// Both give a Prisma client over a driver adapter and the same migration runner.
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import path from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import type { PrismaPg } from "@prisma/adapter-pg";
import type { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../generated/prisma/client.js";
import { lockDataDir } from "./data-dir-lock.js";
import { type DirectQuery, nameOf, preparingOnce, renamingChangedResults, sendingDirect, sendingStreamStarts, statementNames } from "./direct-statements.js";
import { type Migration, type MigrationReport, migrate, pendingMigrations, readMigrations } from "./migrate.js";
import type { DataDirCopy } from "./pglite-copy.js";
import { releaseInstallationFiles } from "./pglite-files.js";
import { countingChild, initialiseInChild } from "./pglite-initdb.js";
import { takingTurns } from "./pglite-turns.js";
import { pgliteSession, pgSession, type SqlSession } from "./sql-session.js";
import { ensureWeeksAhead, partitionTraceTables } from "./trace-partitions/partition-tables.js";
import { withDeadline } from "./transient-errors.js";
import { boundedWaits, closablePool, DEFAULT_TIMEOUTS, type DatabaseTimeouts } from "./bounded-waits.js";

/**
 * Where the data lives. A PGlite target without a dataDir is in memory (tests, scratch work).
 * `loadDataDir` starts a new embedded database from a copy of another's data folder (pglite-copy.ts):
 * tests start from one migrated copy instead of initialising and migrating each database.
 */
export type DatabaseTarget =
  | { kind: "postgres"; url: string; timeouts?: Partial<DatabaseTimeouts>; poolSize?: number; streamPoolSize?: number }
  | { kind: "pglite"; dataDir?: string; loadDataDir?: DataDirCopy };

export { type DatabaseTimeouts, serverStatementTimeout } from "./bounded-waits.js";

/** Connections one process may hold when the target does not say (src/config.ts sizes it by DB_POOL_SIZE or WORKER_CONCURRENCY). */
const DEFAULT_POOL_SIZE = 10;

/**
 * Connections kept apart for the reads that start a live stream (runOutput), when the target does
 * not say (DB_STREAM_POOL_SIZE). 0: those reads share the main pool.
 */
const DEFAULT_STREAM_POOL_SIZE = 4;

/** /ready answers within a second: a database that has not answered by then is not ready. */
const READINESS_DEADLINE_MS = 800;

// Interactive transactions are short, but under load they may queue for a pooled connection
// (PostgreSQL) or for PGlite's single connection; give them room before calling it a failure.
const transactionOptions = { maxWait: 10_000, timeout: 20_000 };

/**
 * The embedded database's PostgreSQL settings, each measured in an idle `npm start` on a new data
 * folder (the touched part of PGlite's WebAssembly memory, which never shrinks):
 * - shared_buffers: PostgreSQL's default buffer pool (128 MB) is touched in full at start; 2 MB
 *   keeps an idle embedded server about 150 MB smaller (about 25 MB smaller than 32 MB, about
 *   2.6 MB smaller than 8 MB and about 1 MB smaller than 4 MB, with no CPU measurable per read or
 *   per turn: docs/performance.md), and what it does not hold the OS's file cache does — the data
 *   folder is read through the file system, so a page not in the pool is a copy away.
 * - track_counts: the per-table activity counters feed autovacuum, which PGlite does not run, and
 *   the pg_stat views, which Dossier does not read on the embedded database; off, PostgreSQL
 *   neither counts nor keeps an entry per table and index touched.
 * - max_connections, autovacuum_worker_slots, max_wal_senders: PGlite is one backend in
 *   single-user mode, with no autovacuum and no replication, yet PostgreSQL sizes its per-backend
 *   shared structures for 100 + 16 + 10 of them: about 4 MB touched for nothing.
 * - max_locks_per_transaction: the shared lock table is sized from it times the backends above,
 *   so with fewer backends each may hold more: 256 × 7 slots, room for a migration that locks
 *   every table and index at once (PostgreSQL's default gives 64 × 127, mostly never touched).
 */
const PGLITE_SETTINGS = [
  "shared_buffers=2MB",
  "track_counts=off",
  "max_connections=5",
  "autovacuum_worker_slots=1",
  "max_wal_senders=0",
  "max_locks_per_transaction=256",
];

/** How often the embedded database analyses every table, when anything was written since (pglite-analyze.ts). */
const PGLITE_ANALYZE_EVERY_MS = 5 * 60_000;
/** How often it looks for tables that grew since their last ANALYZE, and analyses those (pglite-analyze.ts). */
const PGLITE_GROWTH_CHECK_EVERY_MS = 5_000;

/** `reason` is safe to show to anyone; `detail` is for the operator's logs. */
export type Readiness = { ready: true } | { ready: false; reason: string; detail?: string };

export type Database = {
  kind: DatabaseTarget["kind"];
  prisma: PrismaClient;
  /**
   * This process's identity towards the database: a worker's lease owner. On PostgreSQL its
   * sessions carry it as their application_name, so another instance can tell whether it is
   * still connected.
   */
  instanceId: string;
  /**
   * Whether an instance still has a session with the database. An attempt whose lease expired
   * while its instance is connected lost its lease (frozen, cut off); otherwise its process died.
   * The embedded database belongs to one process: any other instance is gone.
   */
  isInstanceConnected(instanceId: string): Promise<boolean>;
  /** Applies pending migrations: those shipped with Dossier, unless others are given. */
  migrate(migrations?: Migration[]): Promise<MigrationReport>;
  /** Reachable and every known migration applied. */
  readiness(): Promise<Readiness>;
  /**
   * `work` on one connection of its own (PostgreSQL) or the embedded database's one session:
   * statements that need a session (advisory locks, DDL such as partition maintenance).
   */
  withSession<T>(work: (session: SqlSession) => Promise<T>): Promise<T>;
  close(): Promise<void>;
};

export type OpenOptions = {
  migrations?: Migration[];
  instanceId?: string;
  /** Called with every SQL statement the Prisma client sends, and its parameters as JSON (benchmarks and statement tests). */
  onQuery?: (sql: string, params: string) => void;
  /** PGlite only: how often every table's planner statistics are refreshed (default 5 minutes). */
  analyzeEveryMs?: number;
  /** PGlite only: how often the tables that grew since their last ANALYZE are looked for and analysed (default 5 seconds). */
  growthCheckEveryMs?: number;
};

export async function openDatabase(
  target: DatabaseTarget,
  {
    migrations = readMigrations(),
    instanceId = newInstanceId(),
    onQuery,
    analyzeEveryMs = PGLITE_ANALYZE_EVERY_MS,
    growthCheckEveryMs = PGLITE_GROWTH_CHECK_EVERY_MS,
  }: OpenOptions = {},
): Promise<Database> {
  return target.kind === "postgres"
    ? openPostgres(
        target.url,
        { ...DEFAULT_TIMEOUTS, ...target.timeouts },
        { main: target.poolSize ?? DEFAULT_POOL_SIZE, stream: target.streamPoolSize ?? DEFAULT_STREAM_POOL_SIZE },
        migrations,
        instanceId,
        onQuery,
      )
    : openPglite(target, migrations, instanceId, onQuery, { analyzeEveryMs, checkEveryMs: growthCheckEveryMs });
}

/** A Prisma client over `adapter`, reporting its statements to `onQuery` when given. */
function prismaClient(adapter: PrismaPg | PrismaPGlite, onQuery?: (sql: string, params: string) => void): PrismaClient {
  if (!onQuery) return new PrismaClient({ adapter, transactionOptions });
  const client = new PrismaClient({ adapter, transactionOptions, log: [{ emit: "event", level: "query" }] });
  client.$on("query", (event) => onQuery(event.query, event.params));
  return client as unknown as PrismaClient;
}

/** host:pid:random, short enough for PostgreSQL's application_name (63 bytes) with its prefix. */
export function newInstanceId(): string {
  return `${hostname().slice(0, 32)}:${process.pid}:${randomBytes(3).toString("hex")}`;
}

const applicationName = (instanceId: string) => `dossier ${instanceId}`;

async function openPglite(
  { dataDir, loadDataDir }: { dataDir?: string; loadDataDir?: DataDirCopy },
  migrations: Migration[],
  instanceId: string,
  onQuery: ((sql: string, params: string) => void) | undefined,
  statistics: { analyzeEveryMs: number; checkEveryMs: number },
): Promise<Database> {
  const lock = dataDir ? lockDataDir(dataDir) : undefined;
  try {
    // Loaded only here: on PostgreSQL the embedded database's code would cost ~45 MB of memory for nothing.
    const [{ PGlite }, { PrismaPGlite }, { preparingStatements }, { keepingStatistics, pgliteFileSize }, { memoryFsHolding, writeDataDirCopy }] =
      await Promise.all([
        import("@electric-sql/pglite"),
        import("pglite-prisma-adapter"),
        import("./pglite-statements.js"),
        import("./pglite-analyze.js"),
        import("./pglite-copy.js"),
      ]);
    const settings = PGLITE_SETTINGS.flatMap((setting) => ["-c", setting]);
    const pgDir = dataDir ? path.join(dataDir, "pg") : undefined;
    // A new folder is initialised and migrated in a child process (pglite-initdb.ts): initdb's peak
    // and what the migrations touch stay out of this one. Its first `migrate` reports them applied.
    let migratedInChild = pgDir && !loadDataDir ? await initialiseInChild(pgDir, settings, migrations) : [];
    // A copy goes into a new folder as files, or into the in-memory file system before PostgreSQL starts.
    if (pgDir && loadDataDir) writeDataDirCopy(loadDataDir, pgDir);
    const fs = !pgDir && loadDataDir ? memoryFsHolding(loadDataDir) : undefined;
    const pglite: PGlite = await PGlite.create(pgDir, { startParams: [...PGlite.defaultStartParams, ...settings], ...(fs && { fs }) });
    // What of PostgreSQL's installation a running database does not read goes (pglite-files.ts).
    releaseInstallationFiles(pglite);
    // Every caller's statements give the event loop a turn first (pglite-turns.ts).
    const shared = takingTurns(pglite);
    const session = pgliteSession(shared);
    // The Prisma client's statements are prepared once each (pglite-statements.ts).
    const prepared = takingTurns(preparingStatements(pglite));
    const prisma = prismaClient(new PrismaPGlite(prepared), onQuery);
    sendingDirect(prisma, async (sql, params) => {
      onQuery?.(sql, JSON.stringify(params));
      return (await prepared.query<Record<string, unknown>>(sql, params as unknown[])).rows;
    });
    // PGlite runs no autovacuum, so nothing else keeps the planner's statistics current: without
    // them a page of a large workspace's links is planned as a scan of every link (7 ms instead of
    // 0.1 ms at 2,000), and a turn's statements keep plans made for empty tables (the embedded
    // turn gap twice as long). Every table is analysed after migrations; then each table that
    // grew, within seconds, and every table every few minutes (pglite-analyze.ts).
    // A copy of a database analysed after its last write (a test's migrated template) starts with
    // current statistics: its first migrate, applying nothing, need not analyse every table again.
    const analyzer = keepingStatistics(session, { ...statistics, fileSize: pgliteFileSize(pglite), analysed: loadDataDir?.analysed });
    const analyze = () => analyzer.analyzeAll().catch(() => undefined);
    return {
      kind: "pglite",
      prisma,
      instanceId,
      isInstanceConnected: async (id) => id === instanceId,
      async migrate(list = migrations) {
        const report = countingChild(await migrate(session, { migrations: list }), migratedInChild);
        migratedInChild = [];
        await analyze();
        return report;
      },
      readiness: () => readinessOf(session, migrations),
      withSession: (work) => work(session),
      async close() {
        analyzer.stop();
        try {
          await prisma.$disconnect();
          await pglite.close();
        } finally {
          lock?.release();
        }
      },
    };
  } catch (error) {
    lock?.release();
    throw error;
  }
}

async function openPostgres(
  url: string,
  timeouts: DatabaseTimeouts,
  poolSizes: { main: number; stream: number },
  migrations: Migration[],
  instanceId: string,
  onQuery?: (sql: string, params: string) => void,
): Promise<Database> {
  // Loaded only here, as PGlite's code is only loaded by openPglite.
  const [{ PrismaPg }, { default: pg }, { directTypes }] = await Promise.all([import("@prisma/adapter-pg"), import("pg"), import("./pg-timestamps.js")]);
  // Idle sessions are kept (idleTimeoutMillis 0): they are how other instances see this one alive.
  // Every wait has a bound: a link that hangs fails calls in seconds instead of TCP's minutes.
  // Every statement is named (the same text, the same name on Prisma's path and the direct one):
  // a connection plans each once, where PostgreSQL spent 0.7–2.4 ms of CPU planning each call of
  // the run path's statements. 250 texts at most, each a few tens of kilobytes of the server's
  // memory per connection that ran it: the run path and the API's reads use far fewer.
  const names = statementNames(250);
  const poolOf = (max: number) => {
    const pool = new pg.Pool({
      Client: renamingChangedResults(pg.Client, names),
      connectionString: url,
      max,
      idleTimeoutMillis: 0,
      application_name: applicationName(instanceId),
      ...boundedWaits(timeouts),
    });
    // An idle client that loses its connection must not crash the process; the next query reconnects.
    pool.on("error", () => undefined);
    return Object.assign(pool, { close: closablePool(pool) });
  };
  const pool = poolOf(poolSizes.main);
  // node-postgres sends a statement without a name unnamed: the adapter's type says string, undefined is what it takes.
  const prisma = prismaClient(new PrismaPg(pool, { statementNameGenerator: nameOf(names) as (query: { sql: string }) => string }), onQuery);
  const directOn = (on: InstanceType<typeof pg.Pool>): DirectQuery => {
    const prepared = preparingOnce(async (statement) => (await on.query<Record<string, unknown>>({ ...statement, types: directTypes })).rows, names);
    return (sql, params) => {
      onQuery?.(sql, JSON.stringify(params));
      return prepared(sql, params);
    };
  };
  sendingDirect(prisma, directOn(pool));
  // A live stream's start waits on its own connections, not behind a burst of writes (another
  // principal's admissions, a worker settling its runs) queued for the main pool's.
  const streamPool = poolSizes.stream > 0 ? poolOf(poolSizes.stream) : undefined;
  if (streamPool) sendingStreamStarts(prisma, directOn(streamPool));
  const withSession = async <T>(work: (session: SqlSession) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      return await work(pgSession(client));
    } finally {
      client.release();
    }
  };
  return {
    kind: "postgres",
    prisma,
    instanceId,
    async isInstanceConnected(id) {
      const rows = await prisma.$queryRawUnsafe<{ connected: boolean }[]>(
        "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1) AS connected",
        applicationName(id),
      );
      return rows[0]?.connected === true;
    },
    // The trace tables are partitioned by week after the migrations (see db/trace-partitions).
    migrate: (list = migrations) =>
      withSession(async (session) => {
        const report = await migrate(session, { migrations: list });
        await partitionTraceTables(session);
        await ensureWeeksAhead(session);
        return report;
      }),
    withSession,
    readiness: () =>
      withDeadline(
        withSession((session) => readinessOf(session, migrations)),
        READINESS_DEADLINE_MS,
        "readiness",
      ).catch(unreachable),
    async close() {
      await prisma.$disconnect();
      // On a link that hangs, a connection's goodbye never comes: its socket is dropped a second later.
      await Promise.all([pool.close(), streamPool?.close()]);
    },
  };
}

async function readinessOf(session: SqlSession, migrations: Migration[]): Promise<Readiness> {
  try {
    const pending = await pendingMigrations(session, migrations);
    return pending.length === 0 ? { ready: true } : { ready: false, reason: `pending migrations: ${pending.join(", ")}` };
  } catch (error) {
    return unreachable(error);
  }
}

function unreachable(error: unknown): Readiness {
  return { ready: false, reason: "database unreachable", detail: error instanceof Error ? error.message : String(error) };
}
