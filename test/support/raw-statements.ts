// Watching or holding the raw statements a database's Prisma client sends ($queryRawUnsafe), e.g.
// the worker's lease renewals. A transaction's client has no method of its own: it reaches the
// client's, with itself as `this`, and that is what keeps its statements in its transaction. So
// the interceptor sends each statement on through the client that called it — a replacement bound
// to the top-level client would send a transaction's statements on a pool connection of their own,
// outside the transaction, where they wait for the row locks the transaction itself holds.
import type { Database } from "../../src/db/open-database.js";

type RawQuery = Database["prisma"]["$queryRawUnsafe"];

/** How a statement is sent on: through the client (or transaction) that sent it. */
export type SendOn = () => Promise<unknown>;

/**
 * Calls `intercept` for every `$queryRawUnsafe` sent through `db`'s client or any of its
 * transactions; `inTransaction` says which. `intercept` sends the statement on by calling `send`.
 */
export function interceptRawQueries(
  db: Database,
  intercept: (sql: string, values: readonly unknown[], send: SendOn, inTransaction: boolean) => Promise<unknown>,
): void {
  const client = db.prisma;
  const original = client.$queryRawUnsafe;
  client.$queryRawUnsafe = function (this: unknown, sql: string, ...values: unknown[]) {
    const via = this ?? client;
    const send = () => Reflect.apply(original, via, [sql, ...values]) as Promise<unknown>;
    return intercept(sql, values, send, via !== client);
  } as RawQuery;
}

/** The text of a worker's lease renewal (domain/runs/lease-renewal.ts). */
export const LEASE_RENEWAL = /SET lease_expires_at = clock_timestamp\(\) \+ make_interval\(secs => \$4::double precision/;
