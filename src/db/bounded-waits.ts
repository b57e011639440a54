// The bounds every PostgreSQL connection of Dossier's waits under — the main pool's, and those of
// pg-boss's pools and the run queue's LISTEN connection — so a link that hangs fails a call in
// seconds instead of TCP's minutes; and how a pool or a connection is closed on such a link.
import type pg from "pg";

/** See Config's DatabaseTimeouts (DB_*_TIMEOUT_MS). */
export type DatabaseTimeouts = { connectMs: number; queryMs: number; statementMs: number; idleInTransactionMs: number };

/**
 * Defaults of the PostgreSQL pool's timeouts (src/config.ts has the same). A transaction left
 * idle this long is ended by PostgreSQL: Dossier's transactions never wait on anything but the
 * database; one that sits idle belongs to a frozen or cut-off process, and its row locks would
 * stall takeovers and cancellations.
 */
export const DEFAULT_TIMEOUTS: DatabaseTimeouts = { connectMs: 5_000, queryMs: 65_000, statementMs: 60_000, idleInTransactionMs: 10_000 };

/**
 * The statement_timeout PostgreSQL enforces: DB_STATEMENT_TIMEOUT_MS, but always shorter than
 * DB_QUERY_TIMEOUT_MS, by a quarter of it and at most 5 s (the defaults, 60 and 65 s, as they are).
 * So the server cancels a statement — one waiting for a lock, or on a busy server — before the
 * client stops waiting for its answer: a statement the client gave up on is rolled back, never
 * committed after its caller was told it failed. Only a link that fails with a statement in flight
 * leaves its outcome unknown (an admission's idempotency key makes its retry safe).
 */
export function serverStatementTimeout({ queryMs, statementMs }: Pick<DatabaseTimeouts, "queryMs" | "statementMs">): number {
  return Math.min(statementMs, queryMs - Math.min(5_000, Math.floor(queryMs / 4)));
}

/** A connection's settings for `timeouts` (the defaults for any left out): every wait it makes has a bound. */
export function boundedWaits(timeouts: Partial<DatabaseTimeouts> = {}) {
  const all = { ...DEFAULT_TIMEOUTS, ...timeouts };
  return {
    connectionTimeoutMillis: all.connectMs,
    query_timeout: all.queryMs,
    statement_timeout: serverStatementTimeout(all),
    idle_in_transaction_session_timeout: all.idleInTransactionMs,
    keepAlive: true,
  } satisfies pg.ClientConfig;
}

/** How long closing a connection or a pool waits for PostgreSQL's goodbye before it drops the sockets. */
export const CLOSE_WAIT_MS = 1_000;

/** Resolves when `promise` settles or after `ms`, whichever comes first; true when it settled. */
export async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = promise.then(
    () => true,
    () => true,
  );
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Drops a connection's socket: on a link that hangs, a client's end() waits for an answer that never comes. */
export function destroyConnection(client: pg.ClientBase): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** Ends a client, dropping its socket when PostgreSQL has not answered within CLOSE_WAIT_MS. */
export async function endClient(client: pg.ClientBase & { end(): Promise<void> }): Promise<void> {
  if (!(await settledWithin(client.end(), CLOSE_WAIT_MS))) destroyConnection(client);
}

/**
 * Ends a pool: its connections get CLOSE_WAIT_MS to finish what they are doing and say goodbye,
 * then the sockets of those left are dropped (a statement still waiting on them fails).
 */
export function closablePool(pool: pg.Pool): () => Promise<void> {
  const clients = new Set<pg.PoolClient>();
  pool.on("connect", (client) => void clients.add(client));
  pool.on("remove", (client) => void clients.delete(client));
  let closing: Promise<void> | undefined;
  return () =>
    (closing ??= (async () => {
      const ending = pool.end();
      if (await settledWithin(ending, CLOSE_WAIT_MS)) return;
      for (const client of clients) destroyConnection(client);
      await settledWithin(ending, CLOSE_WAIT_MS);
    })());
}
