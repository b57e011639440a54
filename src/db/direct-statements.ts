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
 * else through Prisma (a transaction's client, or a client wrapped in a proxy: register the
 * wrapper to keep it on the direct path). Integers wider than 32 bits and numerics may come
 * back as strings or bigints depending on the path: callers read them through Number() or cast
 * them to text in the statement.
 */
export function queryRows<T>(db: PrismaClient | Prisma.TransactionClient, sql: string, ...params: unknown[]): Promise<T[]> {
  const query = direct.get(db);
  return query ? (query(sql, params) as Promise<T[]>) : db.$queryRawUnsafe<T[]>(sql, ...params);
}

/** How statements sent through `db` outside a transaction reach the driver, when `db` is a client registered above. */
export function directQuery(db: PrismaClient | Prisma.TransactionClient): DirectQuery | undefined {
  return direct.get(db);
}

/** A statement as node-postgres takes it: `name` makes it a prepared statement of the connection. */
export type NamedStatement = { text: string; values: unknown[]; name?: string };

/** How PostgreSQL refuses a prepared statement whose result columns changed: "cached plan must not change result type". */
const resultTypeChanged = (error: unknown) => {
  const { code, routine } = error as { code?: string; routine?: string };
  return code === "0A000" && routine === "RevalidateCachedQuery";
};

/**
 * Statements sent straight to PostgreSQL, named so that each connection parses (and, once
 * PostgreSQL settles on a plan, plans) a statement once instead of on every call, as the
 * embedded database's statements are prepared once each (pglite-statements.ts). The same text
 * always gets the same name; the first `limit` distinct texts get one and later ones go unnamed,
 * so a connection holds at most `limit` prepared statements however many texts callers make.
 * A prepared statement whose result columns a migration has changed (`RETURNING span.*` after a
 * column was added) fails on every call from then on: its text is given a new name and sent
 * again, once.
 */
export function preparingOnce(send: (statement: NamedStatement) => Promise<Record<string, unknown>[]>, limit = 500): DirectQuery {
  const names = new Map<string, string>();
  let made = 0;
  const nameOf = (sql: string): string | undefined => {
    const known = names.get(sql);
    if (known !== undefined || names.size >= limit) return known;
    const name = `dossier_direct_${(made += 1)}`;
    names.set(sql, name);
    return name;
  };
  // One name for a text on every connection: node-postgres prepares it on each connection once.
  return async (sql, params) => {
    const name = nameOf(sql);
    try {
      return await send({ text: sql, values: params as unknown[], name });
    } catch (error) {
      if (name === undefined || !resultTypeChanged(error)) throw error;
      const renamed = `dossier_direct_${(made += 1)}`;
      names.set(sql, renamed);
      return send({ text: sql, values: params as unknown[], name: renamed });
    }
  };
}
