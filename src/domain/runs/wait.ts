// A run that waits for people's decisions on its tool calls (human approval). The attempt whose
// step left calls waiting ends HANDED_BACK and gives up its lease in one fenced transaction: the
// run goes WAITING, holding no worker slot but keeping its conversation's execution slot, so
// nothing queued after it starts first. The transaction locks the run row first (the fence) and
// then counts the run's open requests, as a decision locks the run before it decides (domain
// ToolApprovalService): when every request was decided while the step was still running, the run
// is left claimable at once instead of WAITING, and nobody's decision is lost.
//
// A WAITING run's deadline still applies: the worker's sweep ends it TIMED_OUT as an attempt
// would settle it, with the settle steps of a stopped run, its open requests rejected.
import { type EventPublisher, publishRunStatus } from "../../events/topics.js";
import type { PrismaClient } from "../../generated/prisma/client.js";
import { changeSpanIn, endOpenSpansIn, endTraceIn, type TraceChange } from "../trace/trace-writes.js";
import { runAfterCommit, type AfterCommit } from "../after-commit.js";
import { rejectOpenIn } from "./tool-approval-service.js";
import type { AttemptFence } from "./attempt-fence.js";
import type { ClaimedAttempt, EndedRun, SettleStep } from "./vocabulary.js";
import { releaseSlot, type SettleDeps } from "./settle.js";
import { recordRunEvent } from "../webhooks/webhook-events.js";

/** Ends the attempt whose calls wait; true when the run now waits, false when it is claimable again (all decided). */
export async function awaitDecisions(deps: SettleDeps, claimed: ClaimedAttempt, fence: AttemptFence): Promise<boolean> {
  const { run, root, span } = claimed;
  return fence.write(async (tx, after) => {
    const at = new Date();
    const open = await tx.toolApproval.count({ where: { runId: run.id, decision: null } });
    const waiting = open > 0;
    const changes: (TraceChange | null)[] = [
      ...(await endOpenSpansIn(tx, {
        traceId: root.traceId,
        status: "INTERRUPTED",
        reason: "still open when the run began to wait",
        includeRoot: false,
        except: [span.id],
        at,
      })),
      await changeSpanIn(tx, span, { status: "OK", attributes: { "dossier.waitingForDecisions": open }, at }),
    ];
    await tx.runAttempt.updateMany({ where: { runId: run.id, number: claimed.number, endedAt: null }, data: { endedAt: at, outcome: "HANDED_BACK" } });
    await tx.run.update({
      where: { id: run.id },
      data: waiting ? { status: "WAITING", leaseOwner: null, leaseExpiresAt: null } : { leaseOwner: null, leaseExpiresAt: new Date(0) },
    });
    if (waiting) await recordRunEvent(tx, run, "WAITING", { events: deps.events, after });
    after.push(() => deps.announce(changes));
    if (waiting) after.push(() => publishRunStatus(deps.events, run.id, "WAITING"));
    return waiting;
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
  for (const candidate of due) {
    const after: AfterCommit = [];
    const changes = await deps.prisma.$transaction(async (tx) => {
      const at = new Date();
      const taken = await tx.run.updateMany({ where: { id: candidate.id, status: "WAITING" }, data: { status: "TIMED_OUT", finishedAt: at } });
      if (taken.count === 0) return null;
      const run = await tx.run.findUniqueOrThrow({ where: { id: candidate.id } });
      const decided = await rejectOpenIn(tx, run.id, "the run reached its deadline", at);
      for (const step of deps.steps) await step({ tx, run, outcome: { type: "interrupted", status: "TIMED_OUT" }, status: "TIMED_OUT", after });
      await releaseSlot(tx, run);
      await recordRunEvent(tx, run, "TIMED_OUT", { events: deps.events, after });
      return [
        ...decided,
        ...(await endOpenSpansIn(tx, {
          traceId: run.id,
          status: "CANCELLED",
          reason: "the run reached its deadline while it waited for decisions",
          includeRoot: true,
          at,
        })),
        await endTraceIn(tx, run.id, at),
      ];
    });
    if (!changes) continue;
    runAfterCommit(after);
    deps.announce(changes);
    publishRunStatus(deps.events, candidate.id, "TIMED_OUT");
    ended.push({ id: candidate.id, conversationId: candidate.conversationId });
  }
  return ended;
}

export type { EndedRun, SettleStep };
