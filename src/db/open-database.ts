// Opens Dossier's database: PostgreSQL when configured, otherwise the embedded PGlite.
// Both give a Prisma client over a driver adapter and the same migration runner.
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../generated/prisma/client.js";
import { lockDataDir } from "./data-dir-lock.js";
import { type Migration, type MigrationReport, migrate, pendingMigrations, readMigrations } from "./migrate.js";
import { pgliteSession, pgSession, type SqlSession } from "./sql-session.js";

/** Where the data lives. A PGlite target without a dataDir is in memory (tests, scratch work). */
export type DatabaseTarget = { kind: "postgres"; url: string } | { kind: "pglite"; dataDir?: string };

// Interactive transactions are short, but under load they may queue for a pooled connection
// (PostgreSQL) or for PGlite's single connection; give them room before calling it a failure.
const transactionOptions = { maxWait: 10_000, timeout: 20_000 };

/** `reason` is safe to show to anyone; `detail` is for the operator's logs. */
export type Readiness = { ready: true } | { ready: false; reason: string; detail?: string };

export type Database = {
  kind: DatabaseTarget["kind"];
  prisma: PrismaClient;
  /** Applies pending migrations: those shipped with Dossier, unless others are given. */
  migrate(migrations?: Migration[]): Promise<MigrationReport>;
  /** Reachable and every known migration applied. */
  readiness(): Promise<Readiness>;
  close(): Promise<void>;
};

export async function openDatabase(
  target: DatabaseTarget,
  { migrations = readMigrations() }: { migrations?: Migration[] } = {},
): Promise<Database> {
  return target.kind === "postgres" ? openPostgres(target.url, migrations) : openPglite(target.dataDir, migrations);
}

async function openPglite(dataDir: string | undefined, migrations: Migration[]): Promise<Database> {
  const lock = dataDir ? lockDataDir(dataDir) : undefined;
  try {
    const pglite = await PGlite.create(dataDir ? path.join(dataDir, "pg") : undefined);
    const session = pgliteSession(pglite);
    const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite), transactionOptions });
    return {
      kind: "pglite",
      prisma,
      migrate: (list = migrations) => migrate(session, { migrations: list }),
      readiness: () => readinessOf(session, migrations),
      async close() {
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

async function openPostgres(url: string, migrations: Migration[]): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // An idle client that loses its connection must not crash the process; the next query reconnects.
  pool.on("error", () => undefined);
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool), transactionOptions });
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
    migrate: (list = migrations) => withSession((session) => migrate(session, { migrations: list })),
    readiness: () => withSession((session) => readinessOf(session, migrations)).catch(unreachable),
    async close() {
      await prisma.$disconnect();
      await pool.end();
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
