// Claiming a run starts a new attempt (R17–R19), in one transaction:
// - the run is taken: a running run whose lease expired (orphaned: its attempt died or was handed
//   back) before any queued one, or a queued run whose conversation's execution slot is free and
//   that is the oldest queued run of its conversation;
// - its attempt number goes up, so every write of the attempt before (fenced by that number) fails;
// - that attempt is recorded as ended — CRASHED when its instance has no database session left,
//   LEASE_LOST when it is still connected (frozen, or cut off and not yet told) — and every span it
//   left open is ended INTERRUPTED with an event saying why;
// - the new attempt gets its row and an ATTEMPT span under the run's one RUN span;
// - the conversation's execution slot is taken for the run, and a run's question enters the log
//   when the run first starts, so a queued follow-up sees the log as the run before it left it.
import { type EventPublisher, publishRunStatus } from "../../../events/topics.js";
import type { Prisma, PrismaClient, Run, RunAttemptOutcome } from "../../../generated/prisma/client.js";
import { appendMessage } from "../../../domain/research/conversation-service.js";
import { endOpenSpansIn, ensureTrace, startSpanIn, type TraceChange } from "../../../domain/trace/trace-writes.js";
import type { SpanRef } from "../../ports/trace-sink.js";
import type { ClaimedAttempt, InstanceLiveness } from "../../ports/run-state.js";
import { releaseCancelled, type SettleDeps } from "./settle.js";
import { interruption } from "../../attempt/interruption.js";
import { leaseExpiredSql } from "./lease-expired.js";

type Tx = Prisma.TransactionClient;

/** Tells whether a worker instance still has a session with the database (see Database). */
export type { ClaimedAttempt, InstanceLiveness };

export type ClaimOptions = {
  prisma: PrismaClient;
  events: EventPublisher;
  /** Announces committed trace changes (RuntimeTrace.announce). */
  announce: (changes: readonly TraceChange[]) => void;
  workerId: string;
  leaseMs: number;
  leaseMarginMs: number;
  liveness: InstanceLiveness;
  /** The name and attributes of a run's RUN span, when the first attempt creates it. */
  describeRun: (run: Run) => { name: string; attributes: Record<string, unknown> };
};

type Taken = { id: string; attempt: number; previous_owner: string | null };

class SlotTaken extends Error {}

/** Claims the next claimable run (or only `runId`, when it is claimable); null when there is none. */
export async function claimRun(options: ClaimOptions, runId?: string): Promise<ClaimedAttempt | null> {
  const changes: TraceChange[] = [];
  try {
    const claimed = await options.prisma.$transaction(async (tx) => {
      // The lease runs from the claim statement's own start (statement_timestamp(), not the
      // transaction's), which is after this moment: the attempt's clock starts no later than its lease.
      const leaseSentAt = performance.now();
      const [taken] = await tx.$queryRawUnsafe<Taken[]>(
        `WITH candidate AS (
           SELECT r.id, r.lease_owner AS previous_owner FROM run r
            WHERE ($3::text IS NULL OR r.id = $3)
              AND ((r.status = 'RUNNING' AND ${leaseExpiredSql("r", 4)})
                OR (r.status = 'QUEUED'
                    AND NOT EXISTS (SELECT 1 FROM conversation c
                                     WHERE c.id = r.conversation_id AND c.active_run_id IS NOT NULL AND c.active_run_id <> r.id)
                    AND NOT EXISTS (SELECT 1 FROM run o
                                     WHERE o.conversation_id = r.conversation_id AND o.status = 'QUEUED'
                                       AND (o.created_at, o.id) < (r.created_at, r.id))))
            ORDER BY r.status = 'RUNNING' DESC, r.created_at LIMIT 1 FOR UPDATE OF r SKIP LOCKED)
         UPDATE run SET status = 'RUNNING', lease_owner = $1, attempt = run.attempt + 1,
                lease_expires_at = statement_timestamp() + make_interval(secs => $2::double precision / 1000),
                started_at = COALESCE(run.started_at, now())
           FROM candidate WHERE run.id = candidate.id
         RETURNING run.id, run.attempt, candidate.previous_owner`,
        options.workerId,
        options.leaseMs,
        runId ?? null,
        options.leaseMarginMs,
      );
      if (!taken) return null;
      const run = await tx.run.findUniqueOrThrow({ where: { id: taken.id } });
      const now = new Date();
      const traceId = await ensureTrace(tx, run.id);
      if (taken.attempt > 1) changes.push(...(await endPreviousAttempt(tx, options, { run, previousOwner: taken.previous_owner, traceId, now })));
      const root = await rootSpan(tx, options, { run, traceId, now, changes });
      const attemptSpan = await startSpanIn(tx, {
        traceId,
        parentId: root.id,
        kind: "ATTEMPT",
        name: `attempt ${taken.attempt}`,
        attributes: { "dossier.attempt": taken.attempt, "dossier.instance": options.workerId },
        at: now,
      });
      changes.push(attemptSpan.change);
      await tx.runAttempt.create({
        data: { runId: run.id, number: taken.attempt, instance: options.workerId, startedAt: now, spanId: attemptSpan.spanId },
      });
      await takeSlotAndAsk(tx, run);
      return { run, number: taken.attempt, root, span: { id: attemptSpan.spanId, traceId }, leaseSentAt };
    });
    if (claimed) {
      // The RUN and ATTEMPT spans started here are counted where they are announced (a metered trace).
      options.announce(changes);
      publishRunStatus(options.events, claimed.run.id, "RUNNING");
    }
    return claimed;
  } catch (error) {
    if (error instanceof SlotTaken) return null;
    throw error;
  }
}

/** The run's RUN span: one per run, created by its first attempt. */
async function rootSpan(
  tx: Tx,
  options: ClaimOptions,
  { run, traceId, now, changes }: { run: Run; traceId: string; now: Date; changes: TraceChange[] },
): Promise<SpanRef> {
  const existing = await tx.span.findFirst({ where: { traceId, kind: "RUN" }, orderBy: { startedAt: "asc" }, select: { id: true } });
  if (existing) return { id: existing.id, traceId };
  const started = await startSpanIn(tx, { traceId, kind: "RUN", ...options.describeRun(run), at: now });
  changes.push(started.change);
  return { id: started.spanId, traceId };
}

/** Takes the conversation's execution slot; the run's question enters the log when the run first starts. */
async function takeSlotAndAsk(tx: Tx, run: Run): Promise<void> {
  const slot = await tx.conversation.updateMany({
    where: { id: run.conversationId, OR: [{ activeRunId: null }, { activeRunId: run.id }] },
    data: { activeRunId: run.id },
  });
  // Another run of the conversation was claimed concurrently: this claim is undone.
  if (slot.count === 0) throw new SlotTaken();
  const asked = await tx.message.count({ where: { conversationId: run.conversationId, runId: run.id, role: "USER" } });
  if (asked === 0) await appendMessage(tx, { conversationId: run.conversationId, runId: run.id, role: "USER", content: run.question });
}

/** Records how the attempt before ended, and ends every span it left open. */
async function endPreviousAttempt(
  tx: Tx,
  options: ClaimOptions,
  { run, previousOwner, traceId, now }: { run: Run; previousOwner: string | null; traceId: string; now: Date },
): Promise<TraceChange[]> {
  const previous = await tx.runAttempt.findUnique({ where: { runId_number: { runId: run.id, number: run.attempt - 1 } } });
  const outcome: RunAttemptOutcome =
    previous?.outcome ?? (previousOwner === null ? "HANDED_BACK" : (await options.liveness(previousOwner)) ? "LEASE_LOST" : "CRASHED");
  if (previous && !previous.endedAt) {
    await tx.runAttempt.update({
      where: { runId_number: { runId: run.id, number: previous.number } },
      data: { endedAt: now, outcome },
    });
  }
  return endOpenSpansIn(tx, {
    traceId,
    status: "INTERRUPTED",
    reason: interruption(run.attempt - 1, previous?.instance ?? previousOwner ?? "an unknown worker", outcome, run.attempt),
    includeRoot: false,
    at: now,
  });
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
