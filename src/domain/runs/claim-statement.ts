// The claim statement (claim.ts): chooses up to `limit` claimable runs (or only `runId`) and takes
// them, in one statement — first running runs whose worker's lease expired (taken over: they held a
// slot of their principal's cap, which they keep, and go before every other run), then, fairly
// across principals, runs to resume whose attempt ended (handed back, or resumed after decisions:
// no lease owner) and queued runs whose conversation's slot is free and that are the oldest queued
// run of their conversation. Both count against their principal's cap, and are ranked together: a
// principal's k-th run of the claim counts as if the principal already ran k − 1 more, so a claim
// of 20 runs among two principals with none running takes 10 of each (then the principal with
// fewer runs waiting — a principal whose one run arrived behind another's backlog is not served
// after it because the backlog's runs happened to end together — then oldest), and no principal
// gets more than its cap allows. A principal's own runs are in its order: runs to resume first
// (their conversation's slot is theirs and their work under way), then by priority, then oldest;
// priority never orders one principal's runs before another's. The runs its access tokens admitted
// (run.admitted_by_token) together hold at most tokens_max of its places: the places its API keys'
// running runs and their runs waiting to be claimed leave, and never less than the tokens' share
// (tokenRunningShare) — the share is kept for its keys only while they have runs waiting, so no
// place idles for a key run that is not there. A key run that arrives while the tokens hold more
// waits for the next place that frees: that place is its (runs are never stopped). Those two counts
// change only as runs are admitted or end, never as claims move runs from waiting to running, so
// every claim at once finds the same tokens_max. The tokens' runs are ranked among its runs as long
// as the tokens' running runs and those ranked before them leave room, and its API keys' queued
// runs are listed apart from them (an index of each: run_queued_key_idx, run_queued_token_idx), so
// its end users' backlog never hides them.
// Only the next few runs of each principal with runs to resume or queued and below their cap are
// ranked (found by a skip over the index of runs' statuses and principals, then each principal's
// runs in their claim order, its keys' and its tokens' apart), and only the runs to take over
// whose leases expired first: a principal's backlog costs everyone else's claims nothing. (A
// principal's runs to resume are listed together, its keys' and its tokens': few runs wait to
// resume, each having held a running place. Its keys' runs waiting are those listed, and a full
// list counts as many as its cap.)
// The runs chosen are then read by their ids alone.
// The runs are ranked first and locked after, in their order, until `limit` are locked (FOR UPDATE
// SKIP LOCKED, with their status checked again on the row locked): a run another claim holds or
// took meanwhile is passed over for the next, not waited for. The same statement gives the runs
// back as taken (with the claimant's model label recorded on them) and then, after the run rows
// (lock-order.ts), takes the claim lock of each principal whose capped runs it took, in one order
// for every claim, held to the commit: the count of their running runs (and of their tokens') is
// taken by the claim's next statement (first-attempt-statement.ts), which sees every claim that
// committed while this one waited for a lock, and a claim of the same principals at the same time
// waits for this one.
// It answers one row when it takes nothing, saying whether it found runs waiting at all (queued,
// to resume or to take over, held back by a cap or a conversation's slot or not): a worker whose
// last claim found none claims nothing more when one of its slots frees (runtime/worker.ts).
import type { Prisma, Run } from "../../generated/prisma/client.js";
import { runReturning } from "./admit-in-one-statement.js";
import { HOLDING_SLOT, leaseExpiredSql } from "./lease-expired.js";

type Tx = Prisma.TransactionClient;

/**
 * `capped`: the run counts against its principal's cap as it is taken (queued or resumed; not taken
 * over from a worker); `token`: an access token admitted it, so it counts against `tokensMax` too:
 * the running runs its principal's tokens may hold together, as the claim found them.
 */
export type Taken = {
  id: string;
  attempt: number;
  previous_owner: string | null;
  owner_id: string;
  capped: boolean;
  token: boolean;
  tokensMax: number;
  run: Run;
};

/**
 * How many of a principal's `max` running places its access tokens together keep while its API keys
 * have runs waiting: half, at least one. Past it they take only the places its keys' running and
 * waiting runs leave (claim-statement.ts's tokens_max): a place no key run waits for never idles.
 */
export const tokenRunningShare = (max: number): number => Math.max(1, Math.floor(max / 2));

export type TakeOptions = {
  workerId: string;
  leaseMs: number;
  leaseMarginMs: number;
  maxRunningPerPrincipal: number;
  /** The model the claimant's attempts ask, recorded on the runs it takes (their modelLabel). */
  modelLabel?: string;
};

/** The prefix of a principal's claim lock (an advisory lock on its hash). */
const PRINCIPAL_LOCK = "claim-principal:";
/** The statement's parts that are the same for every claim, written once (the RETURNING list is a few µs to build). */
const LEASE_EXPIRED = leaseExpiredSql("r", 6);
const RETURNING = runReturning("run");
/**
 * How many of a principal's claimable queued runs, and of its runs to resume, a claim looks at
 * (more when it claims more), and how many runs to take over: enough to pass over those other
 * claims hold; their count is the principal's runs waiting, so between two principals with more
 * than this waiting, the older run goes first. A claim's cost grows with the principals that have
 * runs waiting and with its limit, not with their backlogs.
 */
const WAITING_COUNTED = 100;

/** The tokens' runs are listed while the tokens' running runs leave room in their places. */
const TOKENS_ROOM = "places.t < places.tokens_max AND r.admitted_by_token IS NOT NULL";

/**
 * One list of a principal's queued runs (of its keys or of its tokens: `which`), in its claim order;
 * `alone`: only the claim's `runId` when it has one (its keys' list is read whole: it counts their runs waiting).
 */
const queuedList = (
  owner: string,
  which: string,
  token: boolean,
  alone = true,
) => `SELECT r.id, false AS resumed, ${token} AS token, r.priority, r.created_at FROM run r
             WHERE ${which} AND r.owner_id = ${owner} AND r.status = 'QUEUED'
               AND ${alone ? "($3::text IS NULL OR r.id = $3)" : "true"} AND r.id <> ALL($9::text[])
               AND NOT EXISTS (SELECT 1 FROM conversation c
                                WHERE c.id = r.conversation_id AND c.active_run_id IS NOT NULL AND c.active_run_id <> r.id)
               AND NOT EXISTS (SELECT 1 FROM run o
                                WHERE o.conversation_id = r.conversation_id AND o.status IN ('QUEUED', 'PAUSED')
                                  AND (o.created_at, o.id) < (r.created_at, r.id))
             ORDER BY r.priority DESC, r.created_at, r.id
             LIMIT GREATEST($7::int, ${WAITING_COUNTED})`;

/** A principal's runs to resume, its keys' and its tokens' together (few wait to resume, each having held a running place), in its claim order. */
const RESUMED_LIST = `SELECT r.id, true AS resumed, r.admitted_by_token IS NOT NULL AS token, r.priority, r.created_at FROM run r
             WHERE r.owner_id = owners.owner_id AND r.status = 'RUNNING' AND r.lease_owner IS NULL AND r.lease_expires_at < now()
             ORDER BY r.priority DESC, r.created_at, r.id
             LIMIT GREATEST($7::int, ${WAITING_COUNTED})`;

/**
 * Takes up to `limit` runs (only `runId` when given), skipping the capped runs of the principals in
 * `full`, the tokens' runs of those in `tokensFull` and the runs in `unslotted`; in the claim's order.
 * `runsWaiting`: the statement found runs queued, to resume or to take over, taken or not (a run
 * held back by its principal's cap or its conversation's slot among them); false when it found none.
 */
export async function takeClaimable(
  tx: Tx,
  options: TakeOptions,
  {
    runId,
    limit,
    full,
    unslotted = [],
    tokensFull = [],
  }: { runId: string | undefined; limit: number; full: readonly string[]; unslotted?: readonly string[]; tokensFull?: readonly string[] },
): Promise<{ taken: Taken[]; runsWaiting: boolean }> {
  const rows = await tx.$queryRawUnsafe<
    (Run & { previousOwner: string | null; capped: boolean; place: number; tokensMax: number | null; locks: unknown; runsWaiting: boolean })[]
  >(
    `WITH RECURSIVE running AS (
       SELECT owner_id, count(*)::int AS n, count(*) FILTER (WHERE admitted_by_token IS NOT NULL)::int AS t FROM run
        WHERE ${HOLDING_SLOT} GROUP BY owner_id),
     claim_owners AS (
       SELECT LEAST((SELECT min(owner_id) FROM run WHERE status = 'QUEUED'),
                    (SELECT min(owner_id) FROM run WHERE status = 'RUNNING' AND lease_owner IS NULL)) AS owner_id
       UNION ALL
       SELECT LEAST((SELECT min(r.owner_id) FROM run r WHERE r.status = 'QUEUED' AND r.owner_id > q.owner_id),
                    (SELECT min(r.owner_id) FROM run r WHERE r.status = 'RUNNING' AND r.lease_owner IS NULL AND r.owner_id > q.owner_id))
         FROM claim_owners q WHERE q.owner_id IS NOT NULL),
     owners AS (
       SELECT q.owner_id, COALESCE(running.n, 0) AS n, COALESCE(running.t, 0) AS t FROM claim_owners q
         LEFT JOIN running ON running.owner_id = q.owner_id
        WHERE q.owner_id IS NOT NULL AND COALESCE(running.n, 0) < $4 AND q.owner_id <> ALL($5::text[])),
     resumable AS (
       SELECT owners.owner_id, next.* FROM owners CROSS JOIN LATERAL (${RESUMED_LIST}) AS next),
     keys AS (
       SELECT * FROM resumable WHERE NOT token
       UNION ALL
       SELECT owners.owner_id, next.* FROM owners CROSS JOIN LATERAL (${queuedList("owners.owner_id", "r.admitted_by_token IS NULL", false, false)}) AS next),
     places AS (
       SELECT owners.owner_id, owners.n, owners.t,
              CASE WHEN owners.owner_id = ANY($11::text[]) THEN 0
                   ELSE GREATEST($10::int, $4 - (owners.n - owners.t)
                          - CASE WHEN COALESCE(waiting.n, 0) >= GREATEST($7::int, ${WAITING_COUNTED}) THEN $4 ELSE COALESCE(waiting.n, 0) END) END AS tokens_max
         FROM owners LEFT JOIN (SELECT owner_id, count(*)::int AS n FROM keys GROUP BY owner_id) AS waiting ON waiting.owner_id = owners.owner_id),
     listed AS (
       SELECT next.id, next.token, places.owner_id, places.n, places.t, places.tokens_max, next.resumed, next.priority, next.created_at,
              row_number() OVER (PARTITION BY places.owner_id, next.token ORDER BY next.resumed DESC, next.priority DESC, next.created_at, next.id) AS kt
         FROM places CROSS JOIN LATERAL (
           (SELECT id, resumed, token, priority, created_at FROM keys
             WHERE keys.owner_id = places.owner_id AND ($3::text IS NULL OR keys.id = $3))
           UNION ALL
           (SELECT id, resumed, token, priority, created_at FROM resumable
             WHERE resumable.owner_id = places.owner_id AND token AND places.t < places.tokens_max AND ($3::text IS NULL OR resumable.id = $3))
           UNION ALL
           (${queuedList("places.owner_id", TOKENS_ROOM, true)})) AS next),
     queued AS (
       SELECT id, n, tokens_max, created_at,
              row_number() OVER (PARTITION BY owner_id ORDER BY resumed DESC, priority DESC, created_at, id) AS k,
              count(*) OVER (PARTITION BY owner_id) AS waiting
         FROM listed WHERE NOT token OR t + kt <= tokens_max),
     orphaned AS (
       SELECT r.id, r.created_at FROM run r
        WHERE ($3::text IS NULL OR r.id = $3) AND r.status = 'RUNNING' AND r.lease_owner IS NOT NULL AND ${LEASE_EXPIRED}
        ORDER BY r.lease_expires_at, r.id LIMIT GREATEST($7::int, ${WAITING_COUNTED})),
     eligible AS (
       SELECT id, true AS orphaned, 0::bigint AS rank, 0::bigint AS waiting, created_at, NULL::int AS tokens_max FROM orphaned
       UNION ALL
       SELECT id, false, n + k, waiting, created_at, tokens_max FROM queued WHERE n + k <= $4),
     chosen AS (
       SELECT id, tokens_max, row_number() OVER (ORDER BY orphaned DESC, rank, waiting, created_at, id) AS place
         FROM eligible),
     candidate AS (
       SELECT r.id, r.lease_owner AS previous_owner, r.owner_id, r.status = 'QUEUED' OR r.lease_owner IS NULL AS capped, chosen.place, chosen.tokens_max FROM run r
         JOIN chosen ON chosen.id = r.id
        WHERE r.id = ANY(ARRAY(SELECT id FROM chosen))
          AND CASE r.status WHEN 'QUEUED' THEN true WHEN 'RUNNING' THEN ${LEASE_EXPIRED} ELSE false END
        ORDER BY chosen.place LIMIT $7
        FOR UPDATE OF r SKIP LOCKED),
     taken AS (
       UPDATE run SET status = 'RUNNING', lease_owner = $1, attempt = run.attempt + 1,
              lease_expires_at = statement_timestamp() + make_interval(secs => $2::double precision / 1000),
              started_at = COALESCE(run.started_at, now()), model_label = COALESCE($8, run.model_label)
         FROM candidate WHERE run.id = candidate.id
       RETURNING ${RETURNING}, candidate.previous_owner AS "previousOwner", candidate.capped, candidate.place, candidate.tokens_max AS "tokensMax"),
     locked AS (
       SELECT pg_advisory_xact_lock(hashtextextended('${PRINCIPAL_LOCK}' || owners.owner, 0))
         FROM (SELECT DISTINCT "ownerId" AS owner FROM taken WHERE capped ORDER BY 1) AS owners)
     SELECT taken.*, (SELECT count(*) FROM locked) AS locks,
            EXISTS (SELECT 1 FROM claim_owners WHERE owner_id IS NOT NULL) OR EXISTS (SELECT 1 FROM orphaned) AS "runsWaiting"
       FROM (SELECT 1) AS one LEFT JOIN taken ON true`,
    options.workerId,
    options.leaseMs,
    runId ?? null,
    options.maxRunningPerPrincipal,
    full,
    options.leaseMarginMs,
    limit,
    options.modelLabel ?? null,
    unslotted,
    tokenRunningShare(options.maxRunningPerPrincipal),
    tokensFull,
  );
  // One row whatever was taken (none: the row of the left join alone, its run's columns null).
  const taken = rows
    .filter((row) => row.id !== null)
    .sort((a, b) => Number(a.place) - Number(b.place))
    .map(({ place: _, locks: __, runsWaiting: ___, previousOwner, capped, tokensMax, ...run }) => ({
      id: run.id,
      attempt: run.attempt,
      previous_owner: previousOwner,
      owner_id: run.ownerId,
      capped,
      token: run.admittedByToken !== null,
      tokensMax: Number(tokensMax ?? options.maxRunningPerPrincipal),
      run: run as Run,
    }));
  return { taken, runsWaiting: rows[0]?.runsWaiting !== false };
}
