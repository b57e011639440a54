// Claiming a run starts a new attempt (R17–R19), in one transaction:
// - the run is taken, fairly across principals: first a running run whose worker's lease expired
//   (a crashed or frozen attempt: it keeps the slot it held); then a run to resume (handed back,
//   or resuming after decisions) or a queued run whose conversation's execution slot is free and
//   that is the oldest queued run of its conversation (a run paused before it started counts as
//   queued there: it keeps its place), of the principal with the fewest running runs, then of the
//   principal with fewer runs waiting, then oldest; a principal's own runs to resume go first, then
//   its highest priority. A principal with maxRunningPerPrincipal running runs gets no run to
//   resume nor queued run claimed, and its access tokens' runs together no more of those places
//   than its API keys' running and waiting runs leave, and at least their share (tokenRunningShare):
//   the share is kept for its keys only while they have runs waiting; both counts are checked again
//   under a lock per principal, so workers claiming at once never exceed them;
// - its attempt number goes up, so every write of the attempt before (fenced by that number) fails;
// - that attempt is recorded as ended — CRASHED when its instance has no database session left,
//   LEASE_LOST when it is still connected (frozen, or cut off and not yet told) — and every span it
//   left open is ended INTERRUPTED with an event saying why;
// - the new attempt gets its row and an ATTEMPT span under the run's one RUN span;
// - the conversation's execution slot is taken for the run, and a run's question enters the log
//   when the run first starts, so a queued follow-up sees the log as the run before it left it.
import { isTransactionConflict } from "../../db/transient-errors.js";
import type { EventPublisher } from "../../events/topics.js";
import type { Prisma, PrismaClient, Run, RunAttemptOutcome } from "../../generated/prisma/client.js";
import { appendMessage } from "../research/conversation-service.js";
import { ensureTrace, startSpanIn, type TraceChange } from "../trace/trace-writes.js";
import { type Applied, announceApplied, applyTransition, SlotTaken, statusAfter } from "./apply-transition.js";
import type { Transition } from "./transition-row.js";
import { TRANSITIONS } from "./transitions.js";
import type { ClaimedAttempt, ClaimedAttempts, InstanceLiveness, SpanRef } from "./vocabulary.js";
import { releaseCancelled, type SettleDeps } from "./settle.js";
import { interruption } from "./interruption.js";
import { HOLDING_SLOT } from "./lease-expired.js";
import { beginFirstAttempts, type FirstAttemptBegun } from "./first-attempt-statement.js";
import { type Taken, takeClaimable } from "./claim-statement.js";

type Tx = Prisma.TransactionClient;

/** Tells whether a worker instance still has a session with the database (see Database). */
export type { ClaimedAttempt, ClaimedAttempts, InstanceLiveness };

export type ClaimOptions = {
  prisma: PrismaClient;
  events: EventPublisher;
  /** Announces committed trace changes (RuntimeTrace.announce). */
  announce: (changes: readonly (TraceChange | null)[]) => void;
  workerId: string;
  leaseMs: number;
  leaseMarginMs: number;
  /** A principal with this many running runs gets no queued run, nor run to resume, of theirs claimed. */
  maxRunningPerPrincipal: number;
  liveness: InstanceLiveness;
  /** The name and attributes of a run's RUN span, when the first attempt creates it. */
  describeRun: (run: Run) => { name: string; attributes: Record<string, unknown> };
  /** The model the claimant's attempts ask, recorded on the runs it takes (claim-statement.ts). */
  modelLabel?: string;
  /** The operator's default daily cost limit per principal, for the requests read with a first attempt (run-requests.ts). */
  dailyCostLimit?: string | null;
};

/** The claimed run's principal reached their running-run cap under a concurrent claim: claim another's run. */
class PrincipalAtCap extends Error {
  constructor(readonly ownerId: string) {
    super(`principal ${ownerId} has reached their running-run cap`);
  }
}

/** The claimed run's access tokens hold every place left to them (Taken.tokensMax), found under a concurrent claim: claim another run. */
class TokensAtShare extends Error {
  constructor(readonly ownerId: string) {
    super(`the access tokens of principal ${ownerId} hold every running place left to them`);
  }
}

/** How often a claim moves on to other runs after losing a race for a principal's last slots or a conversation's slot. */
const CAP_RETRIES = 3;

/** Claims the next claimable run (or only `runId`, when it is claimable); null when there is none. */
export async function claimRun(options: ClaimOptions, runId?: string): Promise<ClaimedAttempt | null> {
  return (await claimRuns(options, 1, runId))[0] ?? null;
}

/**
 * Claims up to `limit` claimable runs in one transaction (or only `runId`), in the claim's order;
 * none when there is none. However many it takes, the transaction is the same four statements
 * for first attempts: BEGIN, the claim statement (the runs as taken, their principals' locks),
 * the attempts' beginning (their conversations' slots and lineage), COMMIT (claim-statement.ts,
 * first-attempt-statement.ts); a run taken over from an attempt before adds its own writes one by one.
 * `runsWaiting`: the claim found runs waiting, taken or not — false only when it found none at all.
 */
export async function claimRuns(options: ClaimOptions, limit: number, runId?: string): Promise<ClaimedAttempts> {
  // Principals found at their cap once their lock was held, and runs whose conversation's slot
  // another run took meanwhile: skipped by the next try, which claims the others again.
  const full: string[] = [];
  const tokensFull: string[] = [];
  const unslotted: string[] = [];
  for (let tries = 0; tries <= CAP_RETRIES; tries += 1) {
    try {
      return await claimOnce(options, { limit, runId, full, tokensFull, unslotted });
    } catch (error) {
      if (error instanceof SlotTaken && runId === undefined && error.runIds.length > 0) unslotted.push(...error.runIds);
      else if (error instanceof SlotTaken) return nothingClaimed(true);
      else if (error instanceof PrincipalAtCap) full.push(error.ownerId);
      else if (error instanceof TokensAtShare) tokensFull.push(error.ownerId);
      // Two claims at once may take their principals' queue exit rows in other orders (the
      // trigger takes each after its run row, in each claim's own order): a deadlock's victim
      // claims again.
      else if (!isTransactionConflict(error) || tries === CAP_RETRIES) throw error;
    }
  }
  return nothingClaimed(true);
}

/** No run claimed; `runsWaiting`: whether runs were found waiting that a later claim may take. */
const nothingClaimed = (runsWaiting: boolean): ClaimedAttempts => Object.assign([], { runsWaiting });

type Claimed = { claimed: ClaimedAttempt; applied: Applied };

/** One claim transaction: takes the fairest claimable runs (skipping the principals in `full`, the tokens' runs of those in `tokensFull`) and starts their attempts. */
async function claimOnce(
  options: ClaimOptions,
  take: { limit: number; runId: string | undefined; full: readonly string[]; tokensFull: readonly string[]; unslotted: readonly string[] },
): Promise<ClaimedAttempts> {
  let runsWaiting = true;
  const claimed = await options.prisma.$transaction(async (tx) => {
    // The lease runs from the claim statement's own start (statement_timestamp(), not the
    // transaction's), which is after this moment: the attempt's clock starts no later than its lease.
    const leaseSentAt = performance.now();
    const { taken, runsWaiting: waiting } = await takeClaimable(tx, options, take);
    runsWaiting = waiting;
    if (taken.length === 0) return [];
    const rows = new Map(taken.map((t) => [t.id, t.run]));
    const now = new Date();
    const firsts = taken.filter((t) => t.attempt === 1);
    const done = new Map<string, Claimed>();
    if (firsts.length > 0) {
      const begins = firsts.map((t) => {
        const run = rows.get(t.id)!;
        return { run, rootSpan: options.describeRun(run), countRunningOf: t.capped ? t.owner_id : undefined };
      });
      const begun = await beginFirstAttempts(tx, begins, { instance: options.workerId, at: now, dailyCostLimit: options.dailyCostLimit ?? null });
      // A run whose conversation's slot another run took since the claim statement chose it: the
      // claim is made again without it (rare: the statement chose only runs whose slot was free).
      const unslotted = begun.filter((b) => !b.slotted).map((b) => b.runId);
      if (unslotted.length > 0) throw new SlotTaken(unslotted);
      checkCaps(firsts, begun, options.maxRunningPerPrincipal);
      for (const b of begun) {
        // A first attempt claims the run (its conversation's slot was taken with its beginning).
        const run = rows.get(b.runId)!;
        const applied = appliedInBatch(TRANSITIONS.claim, run, b.created ? [...b.changes] : []);
        const claimedRun = b.created
          ? { run, number: 1, root: b.root, span: b.span, leaseSentAt }
          : // The run has a trace already: its spans start one by one.
            await startAttempt(tx, options, { run, number: 1, now, leaseSentAt, changes: applied.changes });
        // The conversation's lineage came back with its slot: the attempt reads its log in one statement
        // (none when the log is the question alone), and its requests were read with its beginning.
        const known = { lineage: b.lineage, ...(b.requests && { requests: b.requests }), ...(b.created && b.log && { log: b.log }) };
        done.set(run.id, { claimed: { ...claimedRun, ...known }, applied });
      }
    }
    // Any later attempt takes the run over from the attempt before.
    for (const t of taken.filter((t) => t.attempt > 1)) done.set(t.id, await takeOver(tx, options, t, rows.get(t.id)!, now, leaseSentAt));
    return taken.map((t) => done.get(t.id)!);
  });
  // The RUN and ATTEMPT spans started here are counted where they are announced (a metered trace).
  for (const { applied } of claimed) announceApplied({ events: options.events, trace: options.announce }, applied);
  return Object.assign(
    claimed.map(({ claimed }) => claimed),
    { runsWaiting },
  );
}

/** A later attempt: how the one before ended is recorded, its open spans end, and the new one starts. */
async function takeOver(tx: Tx, options: ClaimOptions, taken: Taken, run: Run, now: Date, leaseSentAt: number): Promise<Claimed> {
  if (taken.capped) checkCap(taken, await countRunning(tx, taken), options.maxRunningPerPrincipal);
  const previous = await previousAttempt(tx, options, run, taken.previous_owner);
  const applied = (await applyTransition(tx, TRANSITIONS.takeOver, run, {
    at: now,
    reason: previous.reason,
    attempt: { number: previous.number, outcome: previous.outcome },
    events: options.events,
  }))!;
  return { claimed: await startAttempt(tx, options, { run, number: taken.attempt, now, leaseSentAt, changes: applied.changes }), applied };
}

/**
 * What the claim row announces for a first attempt, whose writes the claim made set-based for all
 * its runs (the row's only write of its own, the conversation's slot, is in beginFirstAttempts).
 */
function appliedInBatch(row: Transition, run: Run, changes: (TraceChange | null)[]): Applied {
  return { runId: run.id, ownerId: run.ownerId, conversationId: run.conversationId, status: statusAfter(row), changes, announce: row.announce, after: [] };
}

/**
 * Each principal's capped runs claimed here (claim-statement.ts), on top of their others running
 * (counted under their lock), stay within the cap, and its tokens' runs within their places (Taken.tokensMax).
 */
function checkCaps(firsts: readonly Taken[], begun: readonly FirstAttemptBegun[], max: number): void {
  const claimedOf = new Map<string, { all: number; tokens: number }>();
  for (const t of firsts.filter((t) => t.capped)) {
    const claimed = claimedOf.get(t.owner_id) ?? { all: 0, tokens: 0 };
    claimedOf.set(t.owner_id, { all: claimed.all + 1, tokens: claimed.tokens + (t.token ? 1 : 0) });
  }
  for (const [index, t] of firsts.entries()) {
    if (!t.capped) continue;
    const claimed = claimedOf.get(t.owner_id)!;
    const others = { all: begun[index]!.running + claimed.all - 1, tokens: begun[index]!.tokensRunning + claimed.tokens - (t.token ? 1 : 0) };
    checkCap(t, others, max);
  }
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
 * The principal's other running runs, counted under their claim lock, which the claim statement
 * took (claim-statement.ts): a statement of its own, after the lock's, since a statement sees what
 * committed before it began and the lock may have been waited for.
 */
async function countRunning(tx: Tx, taken: Taken): Promise<{ all: number; tokens: number }> {
  const [row] = await tx.$queryRawUnsafe<{ n: number; t: number }[]>(
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE admitted_by_token IS NOT NULL)::int AS t FROM run
      WHERE owner_id = $1 AND id <> $2 AND ${HOLDING_SLOT}`,
    taken.owner_id,
    taken.id,
  );
  return { all: Number(row?.n ?? 0), tokens: Number(row?.t ?? 0) };
}

/** The principal's other running runs (`others`: all of them, and its tokens') leave the run a place. */
function checkCap(taken: Taken, others: { all: number; tokens: number }, max: number): void {
  if (others.all >= max) throw new PrincipalAtCap(taken.owner_id);
  if (taken.token && others.tokens >= taken.tokensMax) throw new TokensAtShare(taken.owner_id);
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
