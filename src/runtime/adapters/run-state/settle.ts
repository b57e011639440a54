// How an attempt ends (R1, R18). Settling is one fenced transaction: the settle steps (the answer
// published, proposals decided, spills released), the spans closed, the trace ended, the terminal
// status, the attempt's outcome and the conversation's slot given back — all or nothing, and
// nothing at all once the run was cancelled or taken over. A cancelled attempt only acknowledges:
// it gives back its lease and the slot, so the conversation's next run may start.
import { type EventPublisher, publishRunStatus, type RunStatusName } from "../../../events/topics.js";
import type { Prisma, PrismaClient, Run, RunAttemptOutcome } from "../../../generated/prisma/client.js";
import { changeSpanIn, endOpenSpansIn, endTraceIn, type TraceChange } from "../../../domain/trace/trace-writes.js";
import { toStored } from "../../../domain/text/stored-text.js";
import type { Outcome } from "../../loop/outcome.js";
import { stepSpanStatus } from "../../loop/spans.js";
import type { SpanStatus } from "../../ports/trace-sink.js";
import type { CancelledEnding, ClaimedAttempt, SettleContext, SettleStep } from "../../ports/run-state.js";
import { runAfterCommit } from "../../../domain/after-commit.js";
import type { AfterCommit } from "../../../domain/after-commit.js";
import { type AttemptFence, AttemptFencedError } from "../../ports/attempt-fence.js";
import { recordRunEvent } from "../../../domain/webhooks/webhook-events.js";

export type { CancelledEnding, SettleContext, SettleStep };

export type SettleDeps = {
  prisma: PrismaClient;
  events: EventPublisher;
  steps: readonly SettleStep[];
  /** Announces committed trace changes (RuntimeTrace.announce). */
  announce: (changes: readonly (TraceChange | null)[]) => void;
  /** Hands spans a cancellation ended to the OTLP exporter. */
  exportEnded: (spanIds: string[]) => void;
};

export function statusOf(outcome: Outcome): RunStatusName {
  switch (outcome.type) {
    case "final":
      return "SUCCEEDED";
    case "failed":
      return "FAILED";
    case "interrupted":
      return outcome.status === "TIMED_OUT" || outcome.status === "CANCELLED" ? outcome.status : "FAILED";
    case "waiting":
      // A waiting run is not settled: the worker leaves it WAITING (awaitDecisions).
      throw new Error("a run waiting for decisions is not settled");
    default: {
      const unknown: never = outcome;
      throw new Error(`unknown outcome ${JSON.stringify(unknown)}`);
    }
  }
}

/** A settled run's spans: an interrupted run that settles was stopped for good (cancelled, timed out). */
const spanStatusOf = (outcome: Outcome): SpanStatus => stepSpanStatus(outcome, "CANCELLED");

/** Settles the run in the attempt's terminal state; returns that state. */
export async function settleAttempt(deps: SettleDeps, claimed: ClaimedAttempt, fence: AttemptFence, outcome: Outcome): Promise<RunStatusName> {
  const status = statusOf(outcome);
  const { run, root, span } = claimed;
  await fence.write(async (tx, after) => {
    for (const step of deps.steps) await step({ tx, run, outcome, status, after });
    const at = new Date();
    const failure = outcome.type === "failed" ? { failureReason: outcome.reason, error: outcome.message } : {};
    const changes: (TraceChange | null)[] = [
      ...(await endOpenSpansIn(tx, {
        traceId: root.traceId,
        status: "INTERRUPTED",
        reason: "still open when the run ended",
        includeRoot: false,
        except: [span.id],
        at,
      })),
      await changeSpanIn(tx, span, { status: spanStatusOf(outcome), attributes: failure, at }),
      await changeSpanIn(tx, root, { status: spanStatusOf(outcome), attributes: failure, at }),
      await endTraceIn(tx, root.traceId, at),
    ];
    await tx.run.update({
      where: { id: run.id },
      data: {
        status,
        answer: outcome.type === "final" ? toStored(outcome.answer) : null,
        failureReason: outcome.type === "failed" ? outcome.reason : null,
        finishedAt: at,
        leaseOwner: null,
        leaseExpiresAt: null,
      },
    });
    await endAttemptRow(tx, run.id, claimed.number, "COMPLETED", at);
    await releaseSlot(tx, run);
    // The owner's webhooks hear of it in this same commit (outbox rows): a crash cannot lose it.
    await recordRunEvent(tx, { ...run, failureReason: outcome.type === "failed" ? outcome.reason : null }, status, { events: deps.events, after });
    after.push(() => deps.announce(changes));
    after.push(() => publishRunStatus(deps.events, run.id, status));
  });
  return status;
}

/** A stopping worker gives the run back: its spans end INTERRUPTED, its lease is released at once. */
export async function handBackAttempt(
  deps: SettleDeps,
  claimed: ClaimedAttempt,
  fence: AttemptFence,
  reason: string,
  delayAfter?: (handedBackBefore: number) => number,
): Promise<number | null> {
  return fence
    .write(async (tx, after) => {
      const at = new Date();
      const changes = await endOpenSpansIn(tx, { traceId: claimed.root.traceId, status: "INTERRUPTED", reason, includeRoot: false, at });
      await endAttemptRow(tx, claimed.run.id, claimed.number, "HANDED_BACK", at);
      // Still RUNNING and still holding its conversation's slot: it resumes before anything queued
      // after it — at once, or after a backoff (by the database's clock, the lease's) when asked.
      const delayMs = delayAfter ? delayAfter(await handedBackBefore(tx, claimed)) : 0;
      await tx.$executeRaw`UPDATE run SET lease_owner = NULL,
        lease_expires_at = CASE WHEN ${delayMs}::int > 0 THEN now() + make_interval(secs => ${delayMs}::int / 1000.0) ELSE 'epoch'::timestamptz END
        WHERE id = ${claimed.run.id}`;
      after.push(() => deps.announce(changes));
      return delayMs;
    })
    .catch((error: unknown) => {
      // Lost meanwhile: whoever holds the run now has it. A failed database is the caller's to handle.
      if (!(error instanceof AttemptFencedError)) throw error;
      return null;
    });
}

/** How many of the run's attempts right before this one were handed back too (at most 10). */
async function handedBackBefore(tx: Prisma.TransactionClient, claimed: ClaimedAttempt): Promise<number> {
  const before = await tx.runAttempt.findMany({
    where: { runId: claimed.run.id, number: { lt: claimed.number } },
    orderBy: { number: "desc" },
    take: 10,
    select: { outcome: true },
  });
  const other = before.findIndex((attempt) => attempt.outcome !== "HANDED_BACK");
  return other === -1 ? before.length : other;
}

/** How a cancelled run's attempt ended, and how its open spans end. */

/**
 * What a cancelled run's attempt still holds — its lease and its conversation's slot — is given
 * back once, by whoever comes first: the attempt itself when it stops (COMPLETED), or the sweep
 * once the lease of an attempt that never stopped expired (CRASHED or LEASE_LOST). The attempt's
 * outcome is recorded, the settle steps of a cancelled run run, and whatever the cancellation
 * left open is closed; the spans the cancellation ended go to the OTLP exporter.
 */
export async function releaseCancelled(deps: SettleDeps, run: Run, ending: CancelledEnding): Promise<void> {
  const changes = await deps.prisma.$transaction(async (tx) => {
    const released = await tx.run.updateMany({
      where: {
        id: run.id,
        attempt: ending.attempt,
        leaseOwner: ending.owner,
        status: "CANCELLED",
        ...(ending.expiredOnly ? { leaseExpiresAt: { lt: new Date() } } : {}),
      },
      data: { leaseOwner: null, leaseExpiresAt: null },
    });
    if (released.count === 0) return [];
    const at = new Date();
    await endAttemptRow(tx, run.id, ending.attempt, ending.outcome, at);
    await releaseSlot(tx, run);
    await runCancelledSteps(deps.steps, tx, run);
    return [
      ...(await endOpenSpansIn(tx, { traceId: run.id, status: ending.spanStatus, reason: ending.reason, includeRoot: true, at })),
      await endTraceIn(tx, run.id, at),
    ];
  });
  if (changes.length === 0) return;
  deps.announce(changes);
  deps.exportEnded(await cancelledSpans(deps.prisma, run.id));
}

/** The spans the cancellation itself ended (at the run's end): the OTLP exporter never saw them end. */
async function cancelledSpans(prisma: PrismaClient, runId: string): Promise<string[]> {
  const run = await prisma.run.findUnique({ where: { id: runId }, select: { finishedAt: true } });
  if (!run?.finishedAt) return [];
  const spans = await prisma.span.findMany({ where: { traceId: runId, status: "CANCELLED", endedAt: run.finishedAt }, select: { id: true } });
  return spans.map((span) => span.id);
}

/**
 * The settle steps of a cancelled run, as its stopped attempt (or whoever releases its abandoned
 * lease) gives it back: they publish nothing and apply nothing for it, and release what it held.
 */
export async function runCancelledSteps(steps: readonly SettleStep[], tx: Prisma.TransactionClient, run: Run): Promise<void> {
  const after: AfterCommit = [];
  for (const step of steps) await step({ tx, run, outcome: { type: "interrupted", status: "CANCELLED" }, status: "CANCELLED", after });
  runAfterCommit(after);
}

async function endAttemptRow(tx: Prisma.TransactionClient, runId: string, number: number, outcome: RunAttemptOutcome, at: Date) {
  await tx.runAttempt.updateMany({ where: { runId, number, endedAt: null }, data: { endedAt: at, outcome } });
}

/** Gives the conversation's execution slot back, so its next queued run may be claimed. */
export async function releaseSlot(tx: Prisma.TransactionClient, run: Pick<Run, "id" | "conversationId">): Promise<void> {
  await tx.conversation.updateMany({ where: { id: run.conversationId, activeRunId: run.id }, data: { activeRunId: null } });
}
