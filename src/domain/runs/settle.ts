// How an attempt ends (R1, R18). Settling is one fenced transaction: the settle row of
// transitions.ts — the settle steps (the answer published, proposals decided, spills released),
// open requests rejected, the spans closed, the trace ended, the terminal status, the attempt's
// outcome and the conversation's slot given back — all or nothing, and nothing at all once the run
// was cancelled or taken over. A cancelled attempt only acknowledges: it gives back its lease and
// the slot, so the conversation's next run may start (releaseCancelled).
import type { EventPublisher, RunStatusName } from "../../events/topics.js";
import type { Prisma, PrismaClient } from "../../generated/prisma/client.js";
import type { TraceChange } from "../trace/trace-writes.js";
import { type Applied, announceApplied, applyTransition, releaseSlot } from "./apply-transition.js";
import { type AttemptFence, AttemptFencedError } from "./attempt-fence.js";
import type { Transition } from "./transition-row.js";
import { TRANSITIONS } from "./transitions.js";
import { inOneStatement, settleInOneStatement } from "./settle-statement.js";
import type { CancelledEnding, ClaimedAttempt, Outcome, RunRecord, SettleContext, SettleStep } from "./vocabulary.js";

export type { CancelledEnding, SettleContext, SettleStep };
export { releaseSlot };

export type SettleDeps = {
  prisma: PrismaClient;
  events: EventPublisher;
  steps: readonly SettleStep[];
  /** Announces committed trace changes (RuntimeTrace.announce). */
  announce: (changes: readonly (TraceChange | null)[]) => void;
  /** Hands spans a cancellation ended to the OTLP exporter. */
  exportEnded: (spanIds: string[]) => void;
};

/** What announces the transitions of the run state: the trace through the runtime's recorder; the worker announces runs. */
export const announcersOf = (deps: Pick<SettleDeps, "events" | "announce">) => ({ events: deps.events, trace: deps.announce });

/** Runs `announce` after commit unless the transition did not apply; throws if it did not (a fenced write's caller sees it). */
function announcing(deps: SettleDeps, applied: Applied | null, after: (() => void)[], what: string): Applied {
  if (!applied) throw new Error(`the run could not ${what}: it is not in a state that allows it`);
  after.push(() => announceApplied(announcersOf(deps), applied));
  return applied;
}

/** Settles the run in the attempt's terminal state; returns that state. */
export async function settleAttempt(deps: SettleDeps, claimed: ClaimedAttempt, fence: AttemptFence, outcome: Outcome): Promise<RunStatusName> {
  const { run, root, span } = claimed;
  const details = {
    at: new Date(),
    reason: "the run ended",
    outcome,
    attempt: { number: claimed.number },
    spans: { root, attempt: span },
    steps: deps.steps,
    events: deps.events,
  };
  const row = settleRowOf(outcome);
  // One statement when nothing but the run's own end is left to write, on its own straight
  // through the driver where the database has that path, the fence's check inside it; else
  // statement by statement. A failed check, or a statement that found something left to decide,
  // wrote nothing: the transaction through the Prisma client then checks again (and says why the
  // attempt lost its run) and writes.
  // The attempt's trace records still queued (its final reply's event, its turn's end) ride in
  // that statement; a settle that is not one waits for them to be written first.
  const one = inOneStatement(row, run, details);
  if (one && fence.writeDirect) {
    const applied = await fence.writeDirect(async (query, holder, after, carry) => {
      const settled = await settleInOneStatement(query, row, run, details, holder, carry);
      return settled && announcing(deps, settled, after, "settle");
    });
    if (applied) return applied.status;
  }
  await fence.takeAhead?.()?.flushed();
  return fence.write(async (tx, after) => {
    const applied = (one && !fence.writeDirect ? await settleInOneStatement(tx, row, run, details) : null) ?? (await applyTransition(tx, row, run, details));
    return announcing(deps, applied, after, "settle").status;
  });
}

/** The row an outcome settles by: a stop the attempt acted on (AFTER_TURN, CONCLUDE) is a row of its own. */
const settleRowOf = (outcome: Outcome): Transition => {
  if (outcome.type === "final" && outcome.budget) return TRANSITIONS.budgetStop;
  if (outcome.type === "final" && outcome.concluded) return TRANSITIONS.conclude;
  if (outcome.type === "interrupted" && outcome.afterTurn) return TRANSITIONS.stopAfterTurn;
  return TRANSITIONS.settle;
};

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
      // Still RUNNING and still holding its conversation's slot: it resumes before its principal's
      // queued runs, under the principal's cap and turn (claim-statement.ts) — at once, or after a
      // backoff (by the database's clock, the lease's) when asked.
      const applied = await applyTransition(tx, TRANSITIONS.handBack, claimed.run, {
        at: new Date(),
        reason,
        attempt: { number: claimed.number },
        events: deps.events,
      });
      if (!applied) return null;
      const delayMs = delayAfter ? delayAfter(await handedBackBefore(tx, claimed)) : 0;
      if (delayMs > 0) {
        await tx.$executeRaw`UPDATE run SET lease_expires_at = now() + make_interval(secs => ${delayMs}::int / 1000.0)
          WHERE id = ${claimed.run.id} AND lease_owner IS NULL`;
      }
      // The worker announces the run itself (in the background; a stopping worker waits for it before it closes its queue).
      after.push(() => announceApplied(announcersOf(deps), applied));
      return delayMs;
    })
    .catch((error: unknown) => {
      // Lost meanwhile: whoever holds the run now has it. A failed database is the caller's to handle.
      if (!(error instanceof AttemptFencedError)) throw error;
      return null;
    });
}

/**
 * The attempt reached a safe point with a pause requested: the run is PAUSED, its lease released
 * (the worker's slot is free), its conversation kept. False when the request was withdrawn
 * meanwhile (resumeRun) or the attempt lost the run: nothing was written.
 */
export async function pauseAttempt(deps: SettleDeps, claimed: ClaimedAttempt, fence: AttemptFence): Promise<boolean> {
  return fence
    .write(async (tx, after) => {
      const details = { at: new Date(), reason: "paused by its owner", attempt: { number: claimed.number }, events: deps.events };
      const applied = await applyTransition(tx, TRANSITIONS.pause, claimed.run, details);
      if (applied) after.push(() => announceApplied(announcersOf(deps), applied));
      return applied !== null;
    })
    .catch((error: unknown) => {
      if (!(error instanceof AttemptFencedError)) throw error;
      return false;
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

/**
 * What a cancelled run's attempt still holds — its lease and its conversation's slot — is given
 * back once, by whoever comes first: the attempt itself when it stops (COMPLETED: releaseCancelled),
 * or the sweep once the lease of an attempt that never stopped expired (CRASHED or LEASE_LOST:
 * releaseAbandoned). The attempt's outcome is recorded, the settle steps of a cancelled run run,
 * and whatever the cancellation left open is closed; the spans the cancellation ended go to the
 * OTLP exporter. Everything is announced after commit.
 */
export async function releaseCancelled(deps: SettleDeps, run: RunRecord, ending: CancelledEnding): Promise<void> {
  const row = ending.outcome === "COMPLETED" ? TRANSITIONS.releaseCancelled : TRANSITIONS.releaseAbandoned;
  const details = {
    at: new Date(),
    reason: ending.reason,
    spanStatus: ending.spanStatus,
    attempt: { number: ending.attempt, outcome: ending.outcome, owner: ending.owner, expiredOnly: ending.expiredOnly },
    partialAnswer: ending.partialAnswer,
    steps: deps.steps,
    events: deps.events,
  };
  const applied = await deps.prisma.$transaction((tx) => applyTransition(tx, row, run, details));
  if (!applied) return;
  announceApplied(announcersOf(deps), applied);
  deps.exportEnded(await cancelledSpans(deps.prisma, run.id));
}

/** The spans the cancellation itself ended (at the run's end): the OTLP exporter never saw them end. */
async function cancelledSpans(prisma: PrismaClient, runId: string): Promise<string[]> {
  const run = await prisma.run.findUnique({ where: { id: runId }, select: { finishedAt: true } });
  if (!run?.finishedAt) return [];
  const spans = await prisma.span.findMany({ where: { traceId: runId, status: "CANCELLED", endedAt: run.finishedAt }, select: { id: true } });
  return spans.map((span) => span.id);
}
