// How many runs one principal may have QUEUED (MAX_QUEUED_RUNS_PER_PRINCIPAL), held at admission.
//
// A principal's QUEUED runs are counted on two rows, kept by triggers on `run` (migrations
// principal_queue, principal_queue_exit) in the transaction of whichever statement writes the run:
// principal_queue.entered counts the runs that ever entered QUEUED (inserted QUEUED, resumed into
// it), principal_queue_exit.exited those that ever left it (claimed, paused, cancelled, deleted).
// Queued: entered − exited.
//
// resumeRun holds a place the same way before it moves a paused run back into QUEUED (pausing a
// queued run gave its place up). A run whose requests are all decided goes on without one: it was
// counted when admitted. A schedule holds no place: each of its fires is an admission.
//
// An admission first takes the principal's entered row (INSERT … ON CONFLICT DO UPDATE, which
// creates it for a principal's first run) and goes on only if entered − exited is below the limit.
// The row stays locked until the admission commits, and its run's insert adds one to it under that
// lock: an admission of the same principal waits for the row, then checks as the first one left it
// (ON CONFLICT DO UPDATE always sees the latest committed row, whatever its snapshot). The exit row
// is read, not locked: a claim holds it to its commit (its runs leave QUEUED in its transaction)
// and an admission never waits for that; read in the admission's snapshot, exited is at most too
// small, so the queued count it sees is at least the true one. So under READ COMMITTED, any number
// of concurrent admissions admit no more runs than fit, and exactly as many while none leaves QUEUED.
//
// Lock order: the rows are taken after the run rows a transaction changes (lock-order.ts) — a claim
// takes its runs, then the trigger takes their principals' exit rows; an admission that interrupts
// a conversation locks the runs it cancels (and so the exit row) first — and an admission holds no
// run row of another.
import type { Prisma } from "../../generated/prisma/client.js";
import { QueueFullError } from "../errors.js";

/** MAX_QUEUED_RUNS_PER_PRINCIPAL's default. */
export const MAX_QUEUED_RUNS_DEFAULT = 1_000;

/**
 * The admission statement's gate (admit-in-one-statement.ts): one row when the principal (`owner`,
 * a parameter) has fewer than `limit` runs queued, taken for every row of `after` (the checks that
 * passed), so nothing is locked when they fail.
 */
export function queueGateSql(owner: string, limit: string, after: string): string {
  return `INSERT INTO principal_queue AS q (principal_id, entered) SELECT ${owner}::text, 0 FROM ${after}
       ON CONFLICT (principal_id) DO UPDATE SET entered = q.entered
         WHERE q.entered - coalesce((SELECT x.exited FROM principal_queue_exit x WHERE x.principal_id = q.principal_id), 0) < ${limit}::bigint
       RETURNING 1`;
}

/**
 * Holds the principal's place for one more queued run inside the caller's transaction, before the
 * run is inserted; a QueueFullError when they have `limit` runs queued already.
 */
export async function holdQueuePlace(tx: Prisma.TransactionClient, principalId: string, limit: number): Promise<void> {
  const held = await tx.$queryRawUnsafe<unknown[]>(queueGateSql("$1", "$2", "(SELECT 1) AS one"), principalId, limit);
  if (held.length === 0) throw new QueueFullError(limit);
}
