// Statements sent to the database without the Prisma client's query path: the trace's hot
// one-statement writes (a batch of records, a span's start or end, a group of events) are sent
// straight to the driver — node-postgres's pool, or the embedded database's prepared statements —
// which costs a fraction of the CPU of `$queryRawUnsafe` (measured on PostgreSQL: about 90 µs a
// statement against 290 µs). Only statements sent outside a transaction take this path: the
// top-level client is the one registered here; a transaction's client is not, and its statements
// go through Prisma as before, so they stay in their transaction. Each statement is still
// reported to the database's `onQuery` (benchmarks and statement tests count them).
import type { Prisma, PrismaClient } from "../generated/prisma/client.js";

/** Runs one statement on its own (autocommit) and returns its rows, values as the driver parses them. */
export type DirectQuery = (sql: string, params: readonly unknown[]) => Promise<Record<string, unknown>[]>;

const direct = new WeakMap<object, DirectQuery>();

/** Registers how statements sent through `client` outside a transaction reach the driver. */
export function sendingDirect(client: PrismaClient, query: DirectQuery): void {
  direct.set(client, query);
}

/**
 * One statement's rows: straight through the driver when `db` is a client registered above,
 * else through Prisma (a transaction's client). Integers wider than 32 bits and numerics may come
 * back as strings or bigints depending on the path: callers read them through Number() or cast
 * them to text in the statement.
 */
export function queryRows<T>(db: PrismaClient | Prisma.TransactionClient, sql: string, ...params: unknown[]): Promise<T[]> {
  const query = direct.get(db);
  return query ? (query(sql, params) as Promise<T[]>) : db.$queryRawUnsafe<T[]>(sql, ...params);
}
