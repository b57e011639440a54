// Claiming a run starts a new attempt (R17–R19), in one transaction:
// - the run is taken, fairly across principals: first a running run whose lease expired (a
//   crashed or handed-back attempt, or one resuming after decisions); then a queued run whose
//   conversation's execution slot is free and that is the oldest queued run of its conversation
//   (a run paused before it started counts as queued there: it keeps its place),
//   of the principal with the fewest running runs, then of their highest priority, then oldest.
//   A principal with maxRunningPerPrincipal running runs gets no queued run claimed; that count is
//   checked again under a lock per principal, so workers claiming at once never exceed it;
// - its attempt number goes up, so every write of the attempt before (fenced by that number) fails;
// - that attempt is recorded as ended — CRASHED when its instance has no database session left,
//   LEASE_LOST when it is still connected (frozen, or cut off and not yet told) — and every span it
//   left open is ended INTERRUPTED with an event saying why;
// - the new attempt gets its row and an ATTEMPT span under the run's one RUN span;
// - the conversation's execution slot is taken for the run, and a run's question enters the log
//   when the run first starts, so a queued follow-up sees the log as the run before it left it.
import type { EventPublisher } from "../../events/topics.js";
import type { Prisma, PrismaClient, Run, RunAttemptOutcome } from "../../generated/prisma/client.js";
import { appendMessage } from "../research/conversation-service.js";
import { ensureTrace, startSpanIn, type TraceChange } from "../trace/trace-writes.js";
import { announceApplied, applyTransition, SlotTaken } from "./apply-transition.js";
import { TRANSITIONS } from "./transitions.js";
import type { ClaimedAttempt, InstanceLiveness, SpanRef } from "./vocabulary.js";
import { releaseCancelled, type SettleDeps } from "./settle.js";
import { interruption } from "./interruption.js";
import { leaseExpiredSql, RUNNING_UNDER_LEASE } from "./lease-expired.js";
import { beginFirstAttempt } from "./first-attempt-statement.js";

type Tx = Prisma.TransactionClient;

/** Tells whether a worker instance still has a session with the database (see Database). */
export type { ClaimedAttempt, InstanceLiveness };

export type ClaimOptions = {
  prisma: PrismaClient;
  events: EventPublisher;
  /** Announces committed trace changes (RuntimeTrace.announce). */
  announce: (changes: readonly (TraceChange | null)[]) => void;
  workerId: string;
  leaseMs: number;
  leaseMarginMs: number;
  /** A principal with this many running runs gets no queued run of theirs claimed. */
  maxRunningPerPrincipal: number;
  liveness: InstanceLiveness;
  /** The name and attributes of a run's RUN span, when the first attempt creates it. */
  describeRun: (run: Run) => { name: string; attributes: Record<string, unknown> };
};

type Taken = { id: string; attempt: number; previous_owner: string | null; owner_id: string; queued: boolean };

/**
 * The claim statement: chooses the next claimable run (or only `runId`) and takes it, in one
 * statement — a queued run whose conversation's slot is free and that is the oldest queued run
 * of its conversation, or a running one whose lease expired. Locks the run row first (lock-order.ts).
 */
async function takeClaimable(tx: Tx, options: ClaimOptions, runId: string | undefined, full: readonly string[]): Promise<Taken | undefined> {
  const [taken] = await tx.$queryRawUnsafe<Taken[]>(
    `WITH running AS (
       SELECT owner_id, count(*)::int AS n FROM run
        WHERE ${RUNNING_UNDER_LEASE} GROUP BY owner_id),
     candidate AS (
       SELECT r.id, r.lease_owner AS previous_owner, r.owner_id, r.status = 'QUEUED' AS queued FROM run r
         LEFT JOIN running ON running.owner_id = r.owner_id
        WHERE ($3::text IS NULL OR r.id = $3)
          AND ((r.status = 'RUNNING' AND ${leaseExpiredSql("r", 6)})
            OR (r.status = 'QUEUED'
                AND COALESCE(running.n, 0) < $4 AND r.owner_id <> ALL($5::text[])
                AND NOT EXISTS (SELECT 1 FROM conversation c
                                 WHERE c.id = r.conversation_id AND c.active_run_id IS NOT NULL AND c.active_run_id <> r.id)
                AND NOT EXISTS (SELECT 1 FROM run o
                                 WHERE o.conversation_id = r.conversation_id AND o.status IN ('QUEUED', 'PAUSED')
                                   AND (o.created_at, o.id) < (r.created_at, r.id))))
        ORDER BY (r.status = 'RUNNING') DESC, COALESCE(running.n, 0), r.priority DESC, r.created_at, r.id
        LIMIT 1 FOR UPDATE OF r SKIP LOCKED)
     UPDATE run SET status = 'RUNNING', lease_owner = $1, attempt = run.attempt + 1,
            lease_expires_at = statement_timestamp() + make_interval(secs => $2::double precision / 1000),
            started_at = COALESCE(run.started_at, now())
       FROM candidate WHERE run.id = candidate.id
     RETURNING run.id, run.attempt, candidate.previous_owner, candidate.owner_id, candidate.queued`,
    options.workerId,
    options.leaseMs,
    runId ?? null,
    options.maxRunningPerPrincipal,
    full,
    options.leaseMarginMs,
  );
  return taken;
}

/** The claimed run's principal reached their running-run cap under a concurrent claim: claim another's run. */
class PrincipalAtCap extends Error {
  constructor(readonly ownerId: string) {
    super(`principal ${ownerId} has reached their running-run cap`);
  }
}

/** How often a claim moves on to another principal's run after losing a race for a principal's last slot. */
const CAP_RETRIES = 3;

/** Claims the next claimable run (or only `runId`, when it is claimable); null when there is none. */
export async function claimRun(options: ClaimOptions, runId?: string): Promise<ClaimedAttempt | null> {
  // Principals found at their cap once their lock was held: skipped by the next try.
  const full: string[] = [];
  for (let tries = 0; tries <= CAP_RETRIES; tries += 1) {
    try {
      return await claimOnce(options, runId, full);
    } catch (error) {
      if (error instanceof SlotTaken) return null;
      if (!(error instanceof PrincipalAtCap)) throw error;
      full.push(error.ownerId);
    }
  }
  return null;
}

/** One claim transaction: takes the fairest claimable run (skipping the principals in `full`) and starts its attempt. */
async function claimOnce(options: ClaimOptions, runId: string | undefined, full: readonly string[]): Promise<ClaimedAttempt | null> {
  const claimed = await options.prisma.$transaction(async (tx) => {
    // The lease runs from the claim statement's own start (statement_timestamp(), not the
    // transaction's), which is after this moment: the attempt's clock starts no later than its lease.
    const leaseSentAt = performance.now();
    const taken = await takeClaimable(tx, options, runId, full);
    if (!taken) return null;
    if (taken.queued) await lockPrincipal(tx, taken.owner_id);
    const run = await tx.run.findUniqueOrThrow({ where: { id: taken.id } });
    const now = new Date();
    // A first attempt claims the run; any later one takes it over from the attempt before.
    if (taken.attempt === 1) {
      const applied = (await applyTransition(tx, TRANSITIONS.claim, run, { at: now, reason: "claimed", events: options.events }))!;
      const countRunningOf = taken.queued ? taken.owner_id : undefined;
      const begun = await beginFirstAttempt(tx, { run, number: 1, instance: options.workerId, rootSpan: options.describeRun(run), at: now, countRunningOf });
      if (taken.queued) checkCap(taken.owner_id, begun.running, options.maxRunningPerPrincipal);
      if (begun.created) {
        applied.changes.push(...begun.changes);
        return { claimed: { run, number: 1, root: begun.root, span: begun.span, leaseSentAt }, applied };
      }
      // The run has a trace already: its spans start one by one.
      return { claimed: await startAttempt(tx, options, { run, number: 1, now, leaseSentAt, changes: applied.changes }), applied };
    }
    if (taken.queued) checkCap(taken.owner_id, await countRunning(tx, taken), options.maxRunningPerPrincipal);
    const previous = await previousAttempt(tx, options, run, taken.previous_owner);
    const applied = (await applyTransition(tx, TRANSITIONS.takeOver, run, {
      at: now,
      reason: previous.reason,
      attempt: { number: previous.number, outcome: previous.outcome },
      events: options.events,
    }))!;
    return { claimed: await startAttempt(tx, options, { run, number: taken.attempt, now, leaseSentAt, changes: applied.changes }), applied };
  });
  if (!claimed) return null;
  // The RUN and ATTEMPT spans started here are counted where they are announced (a metered trace).
  announceApplied({ events: options.events, trace: options.announce }, claimed.applied);
  return claimed.claimed;
}

/** The attempt's beginning, one write at a time: its trace, RUN span (once), ATTEMPT span and row, and the run's question. */
async function startAttempt(
  tx: Tx,
  options: ClaimOptions,
  { run, number, now, leaseSentAt, changes }: { run: Run; number: number; now: Date; leaseSentAt: number; changes: (TraceChange | null)[] },
): Promise<ClaimedAttempt> {
  const traceId = await ensureTrace(tx, run.id);
  const root = await rootSpan(tx, options, { run, traceId, now, changes });
  const attemptSpan = await startSpanIn(tx, {
    traceId,
    parentId: root.id,
    kind: "ATTEMPT",
    name: `attempt ${number}`,
    attributes: { "dossier.attempt": number, "dossier.instance": options.workerId },
    at: now,
  });
  changes.push(attemptSpan.change);
  await tx.runAttempt.create({ data: { runId: run.id, number, instance: options.workerId, startedAt: now, spanId: attemptSpan.spanId } });
  await ask(tx, run);
  return { run, number, root, span: { id: attemptSpan.spanId, traceId }, leaseSentAt };
}

/**
 * A claim of a queued run counts its principal's running runs again under a lock of their own,
 * held to the commit: a claim that committed meanwhile is counted, and one claiming at the same
 * time waits for this one. The count is a statement of its own, after the lock's: a statement
 * sees what committed before it began, and the lock may have been waited for.
 */
async function lockPrincipal(tx: Tx, ownerId: string): Promise<void> {
  await tx.$executeRawUnsafe("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", `claim-principal:${ownerId}`);
}

/** The principal's other running runs, counted under their lock (lockPrincipal). */
async function countRunning(tx: Tx, taken: Taken): Promise<number> {
  const [row] = await tx.$queryRawUnsafe<{ n: number }[]>(
    `SELECT count(*)::int AS n FROM run
      WHERE owner_id = $1 AND id <> $2 AND ${RUNNING_UNDER_LEASE}`,
    taken.owner_id,
    taken.id,
  );
  return Number(row?.n ?? 0);
}

function checkCap(ownerId: string, running: number, max: number): void {
  if (running >= max) throw new PrincipalAtCap(ownerId);
}

/** The run's RUN span: one per run, created by its first attempt. */
async function rootSpan(
  tx: Tx,
  options: ClaimOptions,
  { run, traceId, now, changes }: { run: Run; traceId: string; now: Date; changes: (TraceChange | null)[] },
): Promise<SpanRef> {
  const existing = await tx.span.findFirst({ where: { traceId, kind: "RUN" }, orderBy: { startedAt: "asc" }, select: { id: true } });
  if (existing) return { id: existing.id, traceId };
  const started = await startSpanIn(tx, { traceId, kind: "RUN", ...options.describeRun(run), at: now });
  changes.push(started.change);
  return { id: started.spanId, traceId };
}

/** The run's question enters the log when the run first starts (the claim took the conversation's slot). */
async function ask(tx: Tx, run: Run): Promise<void> {
  const asked = await tx.message.count({ where: { conversationId: run.conversationId, runId: run.id, role: "USER" } });
  if (asked === 0) await appendMessage(tx, { conversationId: run.conversationId, runId: run.id, role: "USER", content: run.question });
}

/** How the attempt before ended — as it recorded, or as its instance's liveness says — and why its spans end. */
async function previousAttempt(
  tx: Tx,
  options: ClaimOptions,
  run: Run,
  previousOwner: string | null,
): Promise<{ number: number; outcome: RunAttemptOutcome; reason: string }> {
  const number = run.attempt - 1;
  const previous = await tx.runAttempt.findUnique({ where: { runId_number: { runId: run.id, number } } });
  const outcome: RunAttemptOutcome =
    previous?.outcome ?? (previousOwner === null ? "HANDED_BACK" : (await options.liveness(previousOwner)) ? "LEASE_LOST" : "CRASHED");
  return { number, outcome, reason: interruption(number, previous?.instance ?? previousOwner ?? "an unknown worker", outcome, run.attempt) };
}

/**
 * Runs cancelled while their attempt's instance was gone or frozen still hold their lease and
 * their conversation's slot. Once the lease expired, they are released as the attempt would have.
 */
export async function releaseAbandoned(deps: SettleDeps & { liveness: InstanceLiveness }): Promise<number> {
  // Only a cancellation ends a run without its attempt: every other end releases the lease with it.
  const abandoned = await deps.prisma.run.findMany({
    where: { leaseExpiresAt: { lt: new Date() }, leaseOwner: { not: null }, status: "CANCELLED" },
    take: 100,
  });
  for (const run of abandoned) {
    const owner = run.leaseOwner!;
    const outcome: RunAttemptOutcome = (await deps.liveness(owner)) ? "LEASE_LOST" : "CRASHED";
    await releaseCancelled(deps, run, {
      attempt: run.attempt,
      owner,
      outcome,
      spanStatus: "INTERRUPTED",
      reason: interruption(run.attempt, owner, outcome),
      expiredOnly: true,
    });
  }
  return abandoned.length;
}
