// pg-boss's schema and Dossier's queues (the run queue, webhook attempts), set up by whichever
// processes start, one at a time. pg-boss creates a queue in a transaction that inserts its row in
// `pgboss.queue`, then adds its table's foreign key to that table and attaches it to `pgboss.job`:
// two processes creating queues at once (the same queue or not) each hold the row lock the other's
// foreign key waits for, and PostgreSQL ends one with `deadlock detected` — the API and a worker
// started together on a fresh database, as any orchestrator starts them, and one of them died.
import type pg from "pg";
import { boundedWaits, type DatabaseTimeouts, endClient } from "./bounded-waits.js";

/**
 * Held (per transaction) while a process starts pg-boss and creates its queues. Neither the
 * migration runner's (72707369), the partition maintenance's (72707370) nor the week expiry's
 * (72707371) key: a migration or a sweep may go on while queues are set up. pg-boss's own lock
 * (a hash of its schema's name) covers its schema's creation and migrations only, not createQueue.
 */
export const PG_BOSS_SETUP_LOCK_KEY = 72707372;

/**
 * Runs `setUp` (pg-boss's start and its createQueue calls, on pg-boss's own pool) while a
 * connection of its own holds PG_BOSS_SETUP_LOCK_KEY, so the processes starting together set up
 * one after the other: the first creates the schema and the queues, the others find them there.
 * The lock goes with its transaction. `timeouts` bound the connection's waits as the pools'
 * (DB_*_TIMEOUT_MS): a process frozen with the lock loses it after DB_IDLE_IN_TRANSACTION_TIMEOUT_MS
 * (PostgreSQL ends its connection), and waiting for the lock is one statement, given up after the
 * statement timeout.
 */
export async function underSetupLock<T>(
  Client: typeof pg.Client,
  { url, timeouts = {}, applicationName }: { url: string; timeouts?: Partial<DatabaseTimeouts>; applicationName: string },
  setUp: () => Promise<T>,
): Promise<T> {
  const client = new Client({ ...boundedWaits(timeouts), connectionString: url, application_name: applicationName });
  // A connection PostgreSQL ends (the idle-in-transaction bound) must not crash the process: the
  // setup it guarded goes on, and its end below fails quietly.
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [PG_BOSS_SETUP_LOCK_KEY]);
    const result = await setUp();
    // Nothing was written on this connection: its end only lets the next process in.
    await client.query("ROLLBACK").catch(() => undefined);
    return result;
  } finally {
    await endClient(client);
  }
}
