// A run that waits for people's decisions on its tool calls (human approval). The attempt whose
// step left calls waiting ends HANDED_BACK and gives up its lease in one fenced transaction: the
// run goes WAITING (the wait row of transitions.ts), holding no worker slot but keeping its
// conversation's execution slot, so nothing queued after it starts first. The transaction locks
// the run row first (the fence) and then counts the run's open requests, as a decision locks the
// run before it decides (ToolApprovalService): when every request was decided while the step was
// still running, the run is left claimable at once instead (decidedBeforeWaiting), and nobody's
// decision is lost.
//
// A WAITING run's deadline still applies: the worker's sweep ends it TIMED_OUT (timeOutWaiting),
// as an attempt would settle it, with the settle steps of a stopped run, its open requests
// rejected once.
import type { EventPublisher } from "../../events/topics.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import { announceApplied, applyTransition } from "./apply-transition.js";
import type { AttemptFence } from "./attempt-fence.js";
import { announcersOf, type SettleDeps } from "./settle.js";
import { TRANSITIONS } from "./transitions.js";
import type { ClaimedAttempt, EndedRun, SettleStep } from "./vocabulary.js";

/** Ends the attempt whose calls wait; true when the run now waits, false when it is claimable again (all decided). */
export async function awaitDecisions(deps: SettleDeps, claimed: ClaimedAttempt, fence: AttemptFence): Promise<boolean> {
  const { run, root, span } = claimed;
  return fence.write(async (tx, after) => {
    const open = await tx.toolApproval.count({ where: { runId: run.id, decision: null } });
    const row = open > 0 ? TRANSITIONS.wait : TRANSITIONS.decidedBeforeWaiting;
    const details = {
      at: new Date(),
      reason: "the run began to wait",
      attempt: { number: claimed.number },
      spans: { root, attempt: span },
      events: deps.events,
    };
    const applied = await applyTransition(tx, row, run, details);
    if (!applied) throw new Error("the run could not wait: it is not RUNNING");
    after.push(() => announceApplied(announcersOf(deps), applied));
    return row === TRANSITIONS.wait;
  });
}

/**
 * Ends TIMED_OUT every WAITING run whose deadline passed (as of `now`); returns the runs it ended. Each in
 * its own transaction, conditional on the run still WAITING: instances sweeping at once, a
 * decision or a cancellation in between, end each run once or not at all.
 */
export async function timeOutWaiting(deps: SettleDeps & { prisma: PrismaClient; events: EventPublisher }, now: Date): Promise<EndedRun[]> {
  const due = await deps.prisma.run.findMany({ where: { status: "WAITING", deadlineAt: { lte: now } }, take: 100 });
  const ended: EndedRun[] = [];
  for (const run of due) {
    const details = {
      at: new Date(),
      reason: "the run reached its deadline while it waited for decisions",
      decisionReason: "the run reached its deadline",
      steps: deps.steps,
      events: deps.events,
    };
    const applied = await deps.prisma.$transaction((tx) => applyTransition(tx, TRANSITIONS.timeOutWaiting, run, details));
    if (!applied) continue;
    announceApplied(announcersOf(deps), applied);
    ended.push({ id: run.id, conversationId: run.conversationId });
  }
  return ended;
}

export type { EndedRun, SettleStep };
