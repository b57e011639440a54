// How the worker ends an attempt once its executor returned (R1, R17, R18): the run is settled as
// the outcome says, released when it was cancelled, left WAITING for decisions, paused, or handed
// back — to resume after a backoff when the database failed it. An attempt that lost its run
// writes nothing more. Whatever frees the conversation's slot wakes a worker for its next run.
import { isTransientDatabaseError } from "../../db/transient-errors.js";
import { interruption } from "../../domain/runs/interruption.js";
import type { Outcome } from "../loop/outcome.js";
import { RunStopped } from "../loop/stop.js";
import { type AttemptFence, AttemptFencedError } from "../ports/attempt-fence.js";
import type { ClaimedAttempt, RunRecord, SettleStep } from "../ports/run-state.js";
import type { WorkerOptions } from "../worker-options.js";
import { handBackAfterDatabaseFailure } from "./hand-back.js";
import type { OwnClock } from "./own-clock.js";
import { settleOutcome } from "./settle-outcome.js";

export type SettleAttemptDeps = {
  options: Pick<WorkerOptions, "runs" | "logger" | "announcer" | "queue" | "settleSteps">;
  workerId: string;
  leaseMs: number;
  /** The clock of the attempt holding the run, while it runs (LeaseKeeper). */
  clock: (runId: string) => OwnClock | undefined;
  /** Stops the work of the attempt holding the run, if it still runs. */
  stop: (runId: string, reason: RunStopped) => void;
};

const modelBusy = (attempt: number, ms: number) =>
  `handed back: the model endpoint kept refusing attempt ${attempt} (rate limited or overloaded); the run resumes in ${Math.ceil(ms / 1000)} s`;

export class AttemptSettling {
  /** Wake-ups on their way (announcements): best effort, and no attempt's slot waits for them. */
  private readonly wakeUps = new Set<Promise<void>>();

  constructor(private readonly deps: SettleAttemptDeps) {}

  /** Resolves once the wake-ups on their way went out (each is bounded by the queue): before the queue closes. */
  async wokenUp(): Promise<void> {
    while (this.wakeUps.size > 0) await Promise.allSettled([...this.wakeUps]);
  }

  /**
   * Sends a wake-up without holding the attempt's slot for it: a worker's sweep finds the runs it
   * announces should it be lost, so a queue whose link hangs never holds a worker's slots.
   */
  private wake(runId: string, send: () => Promise<void>): void {
    const sent: Promise<void> = send()
      .catch((error: unknown) => this.deps.options.logger.warn("announcing a run failed; the sweep finds it", { runId, error: String(error) }))
      .finally(() => this.wakeUps.delete(sent));
    this.wakeUps.add(sent);
  }

  /** Ends the attempt as its outcome says; an attempt that lost its run writes nothing more. */
  async finish(claimed: ClaimedAttempt, fence: AttemptFence, outcome: Outcome): Promise<void> {
    const { logger, runs } = this.deps.options;
    const { workerId } = this.deps;
    const where = this.where(claimed);
    const lost = fence.lost;
    if (lost?.reason === "LEASE_LOST" || (outcome.type === "interrupted" && outcome.status === "LEASE_LOST")) {
      logger.warn("attempt stopped: it no longer holds the run and wrote nothing more", { ...where, reason: lost?.message });
      return;
    }
    // An AFTER_TURN stop the attempt took settles (stopAfterTurn) unless the run was cancelled meanwhile.
    if (lost?.reason === "CANCELLED" || (outcome.type === "interrupted" && outcome.status === "CANCELLED" && !outcome.afterTurn)) {
      // Stopped NOW mid-reply: the text streamed so far stays as the run's partial answer.
      const partialAnswer = outcome.type === "interrupted" ? outcome.partialAnswer : undefined;
      const ending = {
        attempt: claimed.number,
        owner: workerId,
        outcome: "COMPLETED",
        spanStatus: "CANCELLED",
        reason: "the run was cancelled",
        partialAnswer,
      } as const;
      await runs.releaseCancelled(claimed.run, ending, this.steps);
      logger.info("attempt stopped: the run was cancelled", where);
      this.wake(claimed.run.id, () => this.announceNext(claimed.run));
      return;
    }
    if (outcome.type === "waiting") {
      await this.wait(claimed, fence, outcome.toolCallIds);
      return;
    }
    if (outcome.type === "interrupted" && outcome.status === "PAUSED") {
      await this.pause(claimed, fence);
      return;
    }
    if (outcome.type === "interrupted" && outcome.databaseFailed !== undefined) {
      await this.handBackFailed(claimed, fence, outcome.databaseFailed);
      return;
    }
    if (outcome.type === "interrupted" && outcome.status === "HANDED_BACK") {
      const { retryAfterMs } = outcome;
      const reason = retryAfterMs === undefined ? interruption(claimed.number, workerId, "HANDED_BACK") : modelBusy(claimed.number, retryAfterMs);
      await runs.handBack(claimed, fence, reason, retryAfterMs === undefined ? undefined : () => retryAfterMs);
      // A worker process closes its queue once its worker stopped, which waits for this (wokenUp).
      this.wake(claimed.run.id, () => this.announceOrphan(claimed.run.id));
      logger.info("run handed back", { ...where, ...(retryAfterMs !== undefined && { reason, retryAfterMs }) });
      return;
    }
    try {
      // The outcome settled, which is INTERNAL_ERROR when settling the attempt's own failed.
      const { status, settled } = await settleOutcome({ runs, steps: this.steps, logger }, claimed, fence, outcome);
      const failure = settled.type === "failed" ? { failureReason: settled.reason, error: settled.message } : {};
      (status === "FAILED" ? logger.warn : logger.info).call(logger, "run settled", { ...where, status, ...failure });
      this.wake(claimed.run.id, () => this.announceNext(claimed.run));
    } catch (error) {
      // The settle transaction lost its fence: a cancellation (it acknowledges) or a takeover.
      if (error instanceof AttemptFencedError) await this.finish(claimed, fence, { type: "interrupted", status: error.reason });
      else if (isTransientDatabaseError(error)) await this.handBackFailed(claimed, fence, String(error));
      else throw error;
    }
  }

  /** Wakes a worker for the next queued run of the conversation, which could not start before. */
  async announceNext(run: Pick<RunRecord, "conversationId">): Promise<void> {
    const next = await this.deps.options.runs.nextQueued(run.conversationId);
    if (next) await this.deps.options.announcer.announce([next]);
  }

  /**
   * The database failed the attempt: its tools are stopped, and the run is handed back to resume
   * after a backoff, ahead of its principal's queued runs — or, when even that fails while the lease lasts, left to expire.
   */
  private async handBackFailed(claimed: ClaimedAttempt, fence: AttemptFence, why: string): Promise<void> {
    this.deps.stop(claimed.run.id, new RunStopped("HANDED_BACK", "the database failed"));
    const { runs, logger } = this.deps.options;
    const deps = { runs, logger, leaseMs: this.deps.leaseMs, workerId: this.deps.workerId };
    const backoffMs = await handBackAfterDatabaseFailure(deps, { claimed, fence, clock: this.deps.clock(claimed.run.id)! }, why);
    // Announced once claimable again; the sweep finds it should this process stop meanwhile.
    if (backoffMs !== null) setTimeout(() => void this.announceOrphan(claimed.run.id), backoffMs + 200).unref();
  }

  /** Announces a run given back, ahead of the queue when there is one. */
  private async announceOrphan(runId: string): Promise<void> {
    const { queue, announcer, logger } = this.deps.options;
    if (!queue) return announcer.announce([runId]);
    await queue.enqueue([runId], { first: true }).catch((error: unknown) => {
      logger.warn("announcing a handed-back run failed; the sweep finds it", { runId, error: String(error) });
    });
  }

  /**
   * Pauses the run at the attempt's safe point; when the pause was withdrawn meanwhile, the run is
   * handed back instead and goes on in the next attempt. Either way this worker's slot is free.
   */
  private async pause(claimed: ClaimedAttempt, fence: AttemptFence): Promise<void> {
    const { runs, logger } = this.deps.options;
    try {
      if (await runs.pause(claimed, fence)) {
        logger.info("run paused", this.where(claimed));
        return;
      }
      if (fence.lost) return;
      await runs.handBack(claimed, fence, interruption(claimed.number, this.deps.workerId, "HANDED_BACK"));
      this.wake(claimed.run.id, () => this.announceOrphan(claimed.run.id));
    } catch (error) {
      if (isTransientDatabaseError(error)) await this.handBackFailed(claimed, fence, String(error));
      else throw error;
    }
  }

  /** Leaves the run WAITING for decisions on its calls, or claimable at once when they were all decided meanwhile. */
  private async wait(claimed: ClaimedAttempt, fence: AttemptFence, toolCallIds: string[]): Promise<void> {
    const { runs, logger, announcer } = this.deps.options;
    try {
      const waiting = await runs.awaitDecisions(claimed, fence);
      if (!waiting) this.wake(claimed.run.id, () => announcer.announce([claimed.run.id]));
      logger.info(waiting ? "run waits for decisions on tool calls" : "tool calls were decided before the run waited", { ...this.where(claimed), toolCallIds });
    } catch (error) {
      if (error instanceof AttemptFencedError) await this.finish(claimed, fence, { type: "interrupted", status: error.reason });
      else if (isTransientDatabaseError(error)) await this.handBackFailed(claimed, fence, String(error));
      else throw error;
    }
  }

  private where(claimed: ClaimedAttempt) {
    return { runId: claimed.run.id, traceId: claimed.run.id, attempt: claimed.number, worker: this.deps.workerId };
  }

  private get steps(): readonly SettleStep[] {
    return this.deps.options.settleSteps ?? [];
  }
}
