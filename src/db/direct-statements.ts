// Statements sent to the database without the Prisma client's query path: the trace's hot
// one-statement writes (a batch of records, a span's start or end, a group of events) are sent
// straight to the driver — node-postgres's pool, or the embedded database's prepared statements —
// which costs a fraction of the CPU of `$queryRawUnsafe` (measured on PostgreSQL: about 90 µs a
// statement against 290 µs). Only statements sent outside a transaction take this path: the
// top-level client is the one registered here; a transaction's client is not, and its statements
// go through Prisma as before, so they stay in their transaction. Each statement is still
// reported to the database's `onQuery` (benchmarks and statement tests count them).
import type pg from "pg";
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

const streamStarts = new WeakMap<object, DirectQuery>();

/** Registers the connections of `client`'s database kept apart for starting live streams (PostgreSQL's stream pool). */
export function sendingStreamStarts(client: PrismaClient, query: DirectQuery): void {
  streamStarts.set(client, query);
}

/**
 * One statement of a live stream's start (runOutput's first read, its replay): on the connections
 * kept for it when `db` has them, so a subscriber's first delta does not queue behind every
 * statement waiting for the main pool; otherwise as queryRows.
 */
export function streamStartRows<T>(db: PrismaClient, sql: string, ...params: unknown[]): Promise<T[]> {
  const query = streamStarts.get(db);
  return query ? (query(sql, params) as Promise<T[]>) : queryRows<T>(db, sql, ...params);
}

/** How statements sent through `db` outside a transaction reach the driver, when `db` is a client registered above. */
export function directQuery(db: PrismaClient | Prisma.TransactionClient): DirectQuery | undefined {
  return direct.get(db);
}

/** A statement as node-postgres takes it: `name` makes it a prepared statement of the connection. */
export type NamedStatement = { text: string; values: unknown[]; name?: string };

/**
 * Names for statement texts, so that each connection parses (and, once PostgreSQL settles on a
 * plan, plans) a statement once instead of on every call. The same text always gets the same
 * name (node-postgres refuses one name for two texts); the first `limit` distinct texts get one
 * and later ones go unnamed, so a connection holds at most `limit` prepared statements however
 * many texts callers make. `renamed` gives a text a new name: a prepared statement whose result
 * columns a migration changed (`RETURNING span.*` after a column was added) fails on every call
 * under its old one.
 */
export type StatementNames = ReturnType<typeof statementNames>;

export function statementNames(limit = 500) {
  const names = new Map<string, string>();
  let made = 0;
  return {
    known: (sql: string): string | undefined => names.get(sql),
    of(sql: string): string | undefined {
      const known = names.get(sql);
      if (known !== undefined || names.size >= limit) return known;
      const name = `dossier_${(made += 1)}`;
      names.set(sql, name);
      return name;
    },
    renamed(sql: string): string {
      const name = `dossier_${(made += 1)}`;
      names.set(sql, name);
      return name;
    },
  };
}

/** How PostgreSQL refuses a prepared statement whose result columns changed: "cached plan must not change result type". */
export const resultTypeChanged = (error: unknown) => {
  const { code, routine } = error as { code?: string; routine?: string };
  return code === "0A000" && routine === "RevalidateCachedQuery";
};

/**
 * Statements sent straight to PostgreSQL, named (see statementNames), as the embedded database's
 * statements are prepared once each (pglite-statements.ts). A text whose prepared statement
 * PostgreSQL refuses because its result columns changed is sent again under a new name, once.
 */
export function preparingOnce(send: (statement: NamedStatement) => Promise<Record<string, unknown>[]>, names = statementNames()): DirectQuery {
  // One name for a text on every connection: node-postgres prepares it on each connection once.
  return async (sql, params) => {
    const name = names.of(sql);
    try {
      return await send({ text: sql, values: params as unknown[], name });
    } catch (error) {
      if (name === undefined || !resultTypeChanged(error)) throw error;
      // The pool's client may have renamed it already (renamingChangedResults).
      const again = names.of(sql);
      return send({ text: sql, values: params as unknown[], name: again !== name ? again : names.renamed(sql) });
    }
  };
}

/**
 * node-postgres's client class, for a pool whose statements are named by `names`: a prepared
 * statement whose result columns a migration changed fails once, and its text gets a new name
 * for the calls after it. The failing call is not sent again here: inside a transaction nothing
 * can be (preparingOnce sends a direct statement again itself).
 */
export function renamingChangedResults(Base: typeof pg.Client, names: StatementNames): typeof pg.Client {
  const query = Base.prototype.query as (...args: unknown[]) => unknown;
  class Renaming extends Base {}
  // node-postgres's overloads are kept: this takes and returns what they do.
  Renaming.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const { text, name } = (typeof args[0] === "object" && args[0] !== null ? args[0] : {}) as { text?: string; name?: string };
    if (text === undefined || name === undefined) return query.apply(this, args);
    const rename = (error: unknown) => {
      if (resultTypeChanged(error) && names.of(text) === name) names.renamed(text);
    };
    const callback = args.at(-1);
    if (typeof callback === "function")
      return query.apply(this, [
        ...args.slice(0, -1),
        (error: unknown, result: unknown) => {
          if (error) rename(error);
          callback(error, result);
        },
      ]);
    const result = query.apply(this, args);
    if (result instanceof Promise) result.catch(rename);
    return result;
  } as typeof Base.prototype.query;
  return Renaming;
}

/**
 * A statement PostgreSQL plans, alone in its text, and the same text whatever its data: worth
 * preparing. Transaction control and utility statements are not; a text of several statements
 * cannot be; and a text whose shape follows the size of its data — a list of two or more values
 * (`IN ($1, $2)`, as Prisma writes `{ in: [...] }`) or several rows of values (`VALUES (...), ($4,
 * ...)`, as its createMany does) — is a new text for every size, which would fill the names and
 * the server's memory with statements used once.
 */
const worthPreparing = (sql: string) =>
  /^\s*(SELECT|WITH|INSERT|UPDATE|DELETE)\b/i.test(sql) && !/;\s*\S/.test(sql) && !/\bIN\s*\(\s*\$\d+\s*,|\)\s*,\s*\(\s*\$\d+/i.test(sql);

/**
 * The name of a statement a library sends (Prisma's adapter's statementNameGenerator, pg-boss's
 * pool): a text named already is looked up, not tested again; none for a text not worth preparing.
 */
export const nameOf =
  (names: StatementNames) =>
  ({ sql }: { sql: string }): string | undefined =>
    names.known(sql) ?? (worthPreparing(sql) ? names.of(sql) : undefined);
