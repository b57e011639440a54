// Pausing and resuming runs (issue 38). A pause of a RUNNING run is a durable request: its attempt,
// on whichever instance, pauses the run at its next safe point — the end of a turn, once its
// model request and tool calls are over and their results logged, never during a call — and lets
// go of the lease and its worker slot (the pause row). A run that begins to wait for decisions
// first pauses when it goes on (or at once when asked again: it is WAITING). A
// QUEUED or WAITING run, which no attempt holds, pauses at once; decisions on a paused run's
// calls are recorded and used once it is resumed. A PAUSED run keeps its conversation (admission
// treats it as active), and its deadline stands still: resuming moves it on by the time paused.
// Resuming queues the run again for any worker (or leaves it WAITING while decisions are still
// open); resuming a RUNNING run that has not reached its safe point yet withdraws the request.
// A paused run holds no place in its owner's queue (MAX_QUEUED_RUNS_PER_PRINCIPAL, queue-gate.ts):
// resuming it into QUEUED takes one as an admission does, and is a QueueFullError when none is left.
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import type { EventPublisher } from "../../events/topics.js";
import type { PrismaClient, Run } from "../../generated/prisma/client.js";
import { publishTraceChanges } from "../trace/trace-writes.js";
import { NotFoundError, RunEndedError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { type Applied, announceApplied, applyTransition } from "./apply-transition.js";
import { lockRun } from "./lock-order.js";
import type { RunAnnouncer } from "./run-announcer.js";
import { TRANSITIONS } from "./transitions.js";
import type { Tx } from "../transaction.js";
import { isTerminal } from "./stop-reasons.js";
import { holdQueuePlace, MAX_QUEUED_RUNS_DEFAULT } from "./queue-gate.js";

export class PauseService {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      events: EventPublisher;
      announcer?: RunAnnouncer;
      /** The most runs one principal may have QUEUED (MAX_QUEUED_RUNS_PER_PRINCIPAL; queue-gate.ts). */
      maxQueuedRuns?: number;
    },
  ) {}

  /** Pauses a queued or waiting run at once, and asks a running one to pause at its next safe point; a paused run is returned as it is. */
  pauseRun(actor: Actor, runId: string): Promise<Run> {
    return this.change(actor, runId, async (tx, run, at) => {
      const reason = "paused by its owner";
      if (run.status === "QUEUED" || run.status === "WAITING") return applyTransition(tx, TRANSITIONS.pauseIdle, run, this.details(at, reason));
      if (run.status === "RUNNING" && !run.pauseRequestedAt) {
        return applyTransition(tx, TRANSITIONS.requestPause, run, this.details(at, "its owner asked the run to pause at its next safe point"));
      }
      return null;
    });
  }

  /**
   * Resumes a paused run: QUEUED again (WAITING while some of its calls still wait for a decision),
   * its deadline moved on by the time it was paused. A running run's pending pause is withdrawn;
   * any other run that has not ended is returned as it is. Back into QUEUED only within its
   * owner's queue: a QueueFullError, the run still paused, when the owner has as many runs queued
   * as they may.
   */
  resumeRun(actor: Actor, runId: string): Promise<Run> {
    return this.change(actor, runId, async (tx, run, at) => {
      if (run.status === "RUNNING" && run.pauseRequestedAt)
        return applyTransition(tx, TRANSITIONS.withdrawPause, run, this.details(at, "resumed by its owner before it paused"));
      if (run.status !== "PAUSED" || !run.pausedAt) return null;
      const unpaused = { pausedAt: run.pausedAt, deadlineAt: new Date(run.deadlineAt.getTime() + Math.max(0, at.getTime() - run.pausedAt.getTime())) };
      const details = { ...this.details(at, "resumed by its owner"), unpaused };
      // Still waiting for a decision: WAITING again, which holds no place in the queue. Otherwise the
      // owner's queue row is locked after the run's (lock-order.ts) and the run queued under it.
      const waiting = await applyTransition(tx, TRANSITIONS.unpauseWaiting, run, details);
      if (waiting) return waiting;
      // A run an access token admitted takes a place of the tokens' share, and of its end user's, again, whoever resumes it.
      await holdQueuePlace(tx, run.ownerId, this.deps.maxQueuedRuns ?? MAX_QUEUED_RUNS_DEFAULT, run.admittedByToken !== null, run.admittedFor);
      return applyTransition(tx, TRANSITIONS.unpause, run, details);
    });
  }

  private details(at: Date, reason: string) {
    return { at, reason, events: this.deps.events };
  }

  /** Locks the run (lock-order.ts), applies what `move` chooses, and announces it after commit; an ended run is a RunEndedError. */
  private async change(actor: Actor, runId: string, move: (tx: Tx, run: Run, at: Date) => Promise<Applied | null>): Promise<Run> {
    const after: AfterCommit = [];
    const { events, announcer } = this.deps;
    const run = await this.deps.prisma.$transaction(async (tx) => {
      const locked = await lockRun(tx, runId);
      if (!locked || locked.ownerId !== actor.principalId) throw new NotFoundError("Run", runId);
      const current = await tx.run.findUniqueOrThrow({ where: { id: runId } });
      if (isTerminal(current.status)) throw new RunEndedError(current);
      const applied = await move(tx, current, new Date());
      if (applied) {
        const runs = announcer ? { runs: (ids: string[]) => void announcer.announce(ids) } : {};
        after.push(() => announceApplied({ events, trace: (changes) => publishTraceChanges(events, changes), ...runs }, applied));
      }
      return applied ? tx.run.findUniqueOrThrow({ where: { id: runId } }) : current;
    });
    runAfterCommit(after);
    return run;
  }
}
