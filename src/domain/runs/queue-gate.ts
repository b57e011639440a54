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
// A principal's access tokens together hold at most half of its places (tokenQueueShare): however
// many end users' pages admit runs, its API keys keep the rest. The runs a token admitted
// (run.admitted_by_token) are counted apart too, on the same two rows (token_entered, token_exited),
// so an admission by a token checks both counts under the one lock it takes.
//
// And one end user holds at most a quarter of the tokens' share (endUserQueueShare): one end user's
// page admitting in a loop does not take every other end user's places. An end user is the one
// createAccessToken named (run.admitted_for, principal/end-user.ts: every token minted for them holds
// the same places); tokens minted without one are held only by the tokens' share. Its runs are counted on two rows of their own
// (end_user_queue, end_user_queue_exit), kept by the same triggers; the admission takes the end
// user's entered row in the same statement, after the principal's (which serializes every admission
// of the principal already), and reads its exit row as it reads the principal's.
//
// Lock order: the rows are taken after the run rows a transaction changes (lock-order.ts) — a claim
// takes its runs, then the trigger takes their principals' exit rows; an admission that interrupts
// a conversation locks the runs it cancels (and so the exit row) first — and an admission holds no
// run row of another.
import type { Prisma } from "../../generated/prisma/client.js";
import { QueueFullError } from "../errors.js";

/** MAX_QUEUED_RUNS_PER_PRINCIPAL's default. */
export const MAX_QUEUED_RUNS_DEFAULT = 1_000;

/** How many runs a principal's access tokens together may have QUEUED: half of `limit`, at least one. */
export const tokenQueueShare = (limit: number): number => Math.max(1, Math.floor(limit / 2));

/** How many runs one end user's access tokens may have QUEUED: a quarter of the tokens' share, at least one. */
export const endUserQueueShare = (limit: number): number => Math.max(1, Math.floor(tokenQueueShare(limit) / 4));

/**
 * The end user's gate, after the principal's (`after`, the rows that passed it): one row when the
 * end user (`endUser`, a parameter) has fewer than `share` runs queued, its row locked until commit.
 */
export function endUserGateSql(owner: string, endUser: string, share: string, after: string): string {
  return `INSERT INTO end_user_queue AS u (principal_id, end_user, entered) SELECT ${owner}::text, ${endUser}::text, 0 FROM ${after}
       ON CONFLICT (principal_id, end_user) DO UPDATE SET entered = u.entered
         WHERE u.entered - coalesce((SELECT x.exited FROM end_user_queue_exit x WHERE x.principal_id = u.principal_id AND x.end_user = u.end_user), 0)
           < ${share}::bigint
       RETURNING 1`;
}

/**
 * The admission statement's gate (admit-in-one-statement.ts): one row when the principal (`owner`,
 * a parameter) has fewer than `limit` runs queued and, when `tokenLimit` (a parameter) is not null,
 * its access tokens fewer than that; taken for every row of `after` (the checks that passed), so
 * nothing is locked when they fail. `tokens`, when the gate gives no row, the count of the runs the
 * tokens have queued (read as the gate read them): at the tokens' share or not, the error says.
 */
export function queueGateSql(owner: string, limit: string, after: string, tokenLimit: string): string {
  const exit = (column: string) => `coalesce((SELECT x.${column} FROM principal_queue_exit x WHERE x.principal_id = q.principal_id), 0)`;
  return `INSERT INTO principal_queue AS q (principal_id, entered) SELECT ${owner}::text, 0 FROM ${after}
       ON CONFLICT (principal_id) DO UPDATE SET entered = q.entered
         WHERE q.entered - ${exit("exited")} < ${limit}::bigint
           AND (${tokenLimit}::bigint IS NULL OR q.token_entered - ${exit("token_exited")} < ${tokenLimit}::bigint)
       RETURNING 1`;
}

/** The runs the principal's (`owner`) access tokens have QUEUED, as a statement's scalar subquery. */
export function tokensQueuedSql(owner: string): string {
  return `(SELECT q.token_entered - coalesce((SELECT x.token_exited FROM principal_queue_exit x WHERE x.principal_id = q.principal_id), 0)
      FROM principal_queue q WHERE q.principal_id = ${owner}::text)`;
}

/**
 * The refusal of a run when the gate gave no place: the end user's share when the principal's gate
 * passed (`endUserFull`), else the tokens' share when they hold it, else the principal's queue.
 */
export function queueFull(limit: number, byToken: boolean, tokensQueued: unknown, endUserFull = false): QueueFullError {
  if (endUserFull) return new QueueFullError(limit, tokenQueueShare(limit), endUserQueueShare(limit));
  const share = tokenQueueShare(limit);
  return byToken && Number(tokensQueued ?? 0) >= share ? new QueueFullError(limit, share) : new QueueFullError(limit);
}

/**
 * Holds the principal's place for one more queued run inside the caller's transaction, before the
 * run is inserted; a QueueFullError when they have `limit` runs queued already, or when the run is
 * an access token's (`byToken`: it admitted it) and the tokens hold their share, or its end user
 * (`endUser`: Run.admittedFor) its own.
 */
export async function holdQueuePlace(
  tx: Prisma.TransactionClient,
  principalId: string,
  limit: number,
  byToken: boolean,
  endUser: string | null = null,
): Promise<void> {
  const gate = queueGateSql("$1", "$2", "(SELECT 1) AS one", "$3");
  const user = endUser === null ? "SELECT 1 FROM gate" : endUserGateSql("$1", "$4", "$5", "gate");
  const [row] = await tx.$queryRawUnsafe<{ held: number; room: number; tokens: unknown }[]>(
    `WITH gate AS (${gate}), user_gate AS (${user})
     SELECT (SELECT count(*) FROM gate)::int AS held, (SELECT count(*) FROM user_gate)::int AS room, ${byToken ? tokensQueuedSql("$1") : "NULL"} AS tokens`,
    principalId,
    limit,
    byToken ? tokenQueueShare(limit) : null,
    ...(endUser === null ? [] : [endUser, endUserQueueShare(limit)]),
  );
  if (!row || row.held === 0) throw queueFull(limit, byToken, row?.tokens);
  if (row.room === 0) throw queueFull(limit, byToken, row.tokens, true);
}
