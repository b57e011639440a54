// pg-boss's statements (a job's insert, a fetch, a completion) on a pool of Dossier's own that
// names them, as Dossier's own statements are named (direct-statements.ts): each connection plans
// them once instead of on every call. pg-boss takes it as its `db`; its scripts of several
// statements (schema creation, maintenance under a lock) go unnamed.
import type pg from "pg";
import { boundedWaits, closablePool, type DatabaseTimeouts } from "./bounded-waits.js";
import { nameOf, renamingChangedResults, statementNames } from "./direct-statements.js";

/**
 * What pg-boss takes as `db`, and how its pool is closed (pg-boss leaves a `db` it was given
 * open). As pg-boss's own pool does, a statement sent once it is closed is dropped, not refused:
 * pg-boss completes a job it handled without waiting, after its stop() may have returned.
 * Its waits have the main pool's bounds (bounded-waits.ts; `timeouts` as DB_*_TIMEOUT_MS say):
 * on a link that hangs, a job's insert or a fetch fails instead of holding its caller, and
 * close() drops the sockets that did not say goodbye within a second.
 */
export type PreparedPool = { executeSql(text: string, values?: unknown[]): Promise<pg.QueryResult | undefined>; close(): Promise<void> };

export function preparedPool(
  driver: typeof pg,
  config: pg.PoolConfig,
  onError: (error: Error) => void,
  timeouts: Partial<DatabaseTimeouts> = {},
): PreparedPool {
  const names = statementNames(100);
  const named = nameOf(names);
  const pool = new driver.Pool({ ...boundedWaits(timeouts), ...config, Client: renamingChangedResults(driver.Client, names) });
  pool.on("error", onError);
  const end = closablePool(pool);
  let closing: Promise<void> | undefined;
  return {
    executeSql: async (text, values) => (closing ? undefined : pool.query({ text, values, name: named({ sql: text }) })),
    close: () => (closing ??= end()),
  };
}
