// The worker (R1, R17, R18): claims runs, executes each claim as a numbered attempt under a lease
// kept alive by a heartbeat, and settles the run. Every write of an attempt goes through its
// fence (ports/attempt-fence.ts), so an attempt whose run was taken over or cancelled writes nothing;
// a heartbeat that fails or finds the lease gone aborts the attempt's model request and tool
// calls at once. An attempt that could not renew its lease stops itself by its own clock before
// its lease may expire (attempt/own-clock.ts); one the database failed hands its run back
// (attempt/hand-back.ts). A run whose worker died is claimed again once its lease expired and
// resumed from the log as the next attempt, before runs that were only queued.
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { RunRecord } from "./ports/run-state.js";
import { interruption } from "../domain/runs/interruption.js";
import type { ClaimedAttempt, InstanceLiveness } from "./ports/run-state.js";
import { type AttemptFence, AttemptFencedError } from "./ports/attempt-fence.js";
import { LeaseKeeper } from "./attempt/lease-keeper.js";
import { handBackAfterDatabaseFailure } from "./attempt/hand-back.js";
import { isTransientDatabaseError } from "../db/transient-errors.js";
import { settleOutcome } from "./attempt/settle-outcome.js";
import type { SettleStep } from "./ports/run-state.js";
import type { Outcome } from "./loop/run-executor.js";
import { RunStopped } from "./loop/stop.js";
import type { RunQueue } from "./ports/run-queue.js";
import { ClaimPasses, claimInRounds } from "./claim-passes.js";
import type { WorkerOptions } from "./worker-options.js";

export type { SettleStep };

/** Stops heard announced or by a lease renewal, NOW aside: CONCLUDE stops the work in hand, AFTER_TURN the next model request. */
type Heard = Record<"CONCLUDE" | "AFTER_TURN", AbortController>;
const hear = (heard: Heard | undefined, mode: string) => (mode === "CONCLUDE" || mode === "AFTER_TURN") && heard?.[mode].abort();

/** A run in flight: `controller` stops the attempt. */
type Active = { controller: AbortController; heard: Heard; done: Promise<void> };

const modelBusy = (attempt: number, ms: number) =>
  `handed back: the model endpoint kept refusing attempt ${attempt} (rate limited or overloaded); the run resumes in ${Math.ceil(ms / 1000)} s`;

export class RunWorker {
  readonly workerId: string;
  private readonly leaseMs: number;
  private readonly leaseMarginMs: number;
  private readonly concurrency: number;
  private readonly liveness: InstanceLiveness;
  private readonly active = new Map<string, Active>();
  private readonly passes: ClaimPasses;
  private readonly leases: LeaseKeeper; // one heartbeat for every attempt held, and their clocks
  private stopped = true;
  private claimWidth = 1; // what the next pass's first claim asks for (claimInRounds)
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: WorkerOptions) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.leaseMs = options.leaseMs ?? 15_000;
    this.leaseMarginMs = options.leaseMarginMs ?? Math.min(3_000, Math.floor(this.leaseMs / 5));
    this.concurrency = options.concurrency ?? 4;
    this.liveness = options.liveness ?? (async (instance) => instance === this.workerId);
    this.leases = new LeaseKeeper({ runs: options.runs, leaseMs: this.leaseMs, marginMs: this.leaseMarginMs });
    this.passes = new ClaimPasses({
      pass: (sweep) => this.pass(sweep),
      sweepMs: options.sweepMs ?? this.leaseMs / 3,
      logger: options.logger,
    });
  }

  start(): void {
    this.stopped = false;
    this.unsubscribe = this.listen();
    for (const companion of this.options.companions ?? []) companion.start();
    this.passes.start();
  }

  /**
   * Stops claiming, interrupts runs in flight and hands their leases back for another worker.
   * A claim in progress is awaited first (its transaction must end before the database closes),
   * and a run it claimed is handed back with the others.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    await this.passes.stop();
    for (const { controller } of this.active.values()) controller.abort(new RunStopped("HANDED_BACK"));
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
    await Promise.allSettled((this.options.companions ?? []).map((companion) => companion.stop()));
  }

  /** One claim pass: the sweep when it is due, then claims while a slot is free (claim-passes.ts). */
  private async pass(sweep: boolean): Promise<void> {
    if (sweep) await this.sweep();
    this.claimWidth = await claimInRounds({
      free: () => (this.stopped ? 0 : this.concurrency - this.active.size),
      claim: (count) => (this.options.queue ? this.claimDelivered(this.options.queue, count) : this.claimMany(count)),
      begin: (claimed) => this.begin(claimed),
      from: this.claimWidth,
    });
  }

  /** Claims up to `count` runs in one transaction. */
  private claimMany(count: number): Promise<ClaimedAttempt[]> {
    return this.options.runs.claimMany(
      {
        workerId: this.workerId,
        leaseMs: this.leaseMs,
        leaseMarginMs: this.leaseMarginMs,
        maxRunningPerPrincipal: this.options.maxRunningPerPrincipal ?? this.concurrency,
        liveness: this.liveness,
        describeRun: (run) => this.options.executor.describeRun(run),
        modelLabel: this.options.executor.modelLabel,
      },
      count,
    );
  }

  /**
   * Takes up to `count` deliveries and claims the fairest claimable runs, whichever runs were delivered:
   * deliveries come oldest first across principals, and claiming them as delivered would let one
   * principal's backlog delay everybody else's runs. A delivered run that is not claimed now stays
   * QUEUED in the table, where every later pass looks for it (a pass runs whenever a slot frees);
   * orphaned runs come first in the claim's own order.
   */
  private async claimDelivered(queue: RunQueue, count: number): Promise<ClaimedAttempt[]> {
    // The claim does not wait for the deliveries (it claims from the table either way), nor for
    // their acknowledgements: both are round trips between a wake-up and the runs' start.
    const taking = queue.take(count).catch(() => []);
    const claimed = await this.claimMany(count);
    void taking.then((deliveries) => {
      for (const delivery of deliveries) delivery.done().catch(() => undefined);
    });
    return claimed;
  }

  /**
   * Releases the leases of runs that ended while their attempt's instance was gone, and — with a
   * queue — announces runs that are queued, or running under an expired lease, so a worker claims them.
   */
  private async sweep(): Promise<void> {
    await this.options.runs.releaseAbandoned(this.liveness, this.steps);
    await this.sweepWaiting();
    if (!this.options.queue) return;
    // Every pass claims from the run table, so a few announcements wake idle workers elsewhere;
    // announcing every claimable run (one job each) would hold this pass up behind a long backlog.
    // Orphaned runs are announced ahead of the queue.
    const claimable = await this.options.runs.claimable(this.leaseMarginMs);
    const orphaned = claimable.filter((run) => run.orphaned).map((run) => run.id);
    const queued = claimable.filter((run) => !run.orphaned).map((run) => run.id);
    if (orphaned.length > 0) await this.options.queue.enqueue(orphaned, { first: true });
    if (queued.length > 0) await this.options.queue.enqueue(queued.slice(0, this.concurrency));
  }

  /** Rejects approval requests past their time (their runs resume) and ends waiting runs past their deadline. */
  private async sweepWaiting(): Promise<void> {
    const now = this.options.now?.() ?? new Date();
    const expired = await this.options.approvals?.expireDue(now);
    if (expired) this.options.logger.info("rejected tool calls nobody decided in time", { count: expired });
    for (const run of await this.options.runs.timeOutWaiting(now, this.steps)) {
      this.options.logger.info("run settled", { runId: run.id, traceId: run.id, status: "TIMED_OUT", while: "waiting for decisions" });
      await this.announceNext(run);
    }
  }

  private begin(claimed: ClaimedAttempt): void {
    const controller = new AbortController();
    const heard: Heard = { CONCLUDE: new AbortController(), AFTER_TURN: new AbortController() };
    const done = this.execute(claimed, controller, heard, claimed.leaseSentAt).finally(() => {
      this.active.delete(claimed.run.id);
      // A slot is free: a ready run that found none waiting takes it now.
      if (!this.stopped) this.passes.wake();
    });
    this.active.set(claimed.run.id, { controller, heard, done });
  }

  private async execute(claimed: ClaimedAttempt, controller: AbortController, heard: Heard, sentAt: number): Promise<void> {
    const { logger, runs } = this.options;
    const { run } = claimed;
    const holder = { runId: run.id, attempt: claimed.number, workerId: this.workerId };
    const fence = runs.fence(holder, (reason, detail) => {
      if (!controller.signal.aborted) controller.abort(new RunStopped(reason, detail));
    });
    // A stop not heard announced (requested on another instance) is found by the next renewal.
    const lease = this.leases.keep({ fence, sentAt, onStop: (mode) => hear(heard, mode) });
    const context = { ...claimed, fence, signal: controller.signal, conclude: heard.CONCLUDE.signal, afterTurn: heard.AFTER_TURN.signal };
    const remaining = run.deadlineAt.getTime() - Date.now();
    const deadline = setTimeout(() => controller.abort(new RunStopped("TIMED_OUT")), Math.max(0, remaining));
    // A run's trace shares its id: logs and traces join on either.
    const where = { runId: run.id, traceId: run.id, attempt: claimed.number, worker: this.workerId };
    try {
      logger.info("attempt started", where);
      const outcome = await this.options.executor.execute(context);
      await this.finish(claimed, fence, outcome);
    } catch (error) {
      if (error instanceof AttemptFencedError) await this.finish(claimed, fence, { type: "interrupted", status: error.reason });
      else if (isTransientDatabaseError(error)) await this.finish(claimed, fence, databaseFailed(error)).catch(() => undefined);
      else logger.error("attempt failed", { ...where, error: String(error) });
    } finally {
      clearTimeout(deadline);
      lease.stop();
    }
  }

  /** Ends the attempt as its outcome says; an attempt that lost its run writes nothing more. */
  private async finish(claimed: ClaimedAttempt, fence: AttemptFence, outcome: Outcome): Promise<void> {
    const { logger } = this.options;
    const where = { runId: claimed.run.id, traceId: claimed.run.id, attempt: claimed.number, worker: this.workerId };
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
        owner: this.workerId,
        outcome: "COMPLETED",
        spanStatus: "CANCELLED",
        reason: "the run was cancelled",
        partialAnswer,
      } as const;
      await this.options.runs.releaseCancelled(claimed.run, ending, this.steps);
      logger.info("attempt stopped: the run was cancelled", where);
      await this.announceNext(claimed.run);
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
      const reason = retryAfterMs === undefined ? interruption(claimed.number, this.workerId, "HANDED_BACK") : modelBusy(claimed.number, retryAfterMs);
      await this.options.runs.handBack(claimed, fence, reason, retryAfterMs === undefined ? undefined : () => retryAfterMs);
      // Awaited: a worker process closes its queue right after its worker stopped.
      await this.announceOrphan(claimed.run.id);
      logger.info("run handed back", { ...where, ...(retryAfterMs !== undefined && { reason, retryAfterMs }) });
      return;
    }
    try {
      // The outcome settled, which is INTERNAL_ERROR when settling the attempt's own failed.
      const { status, settled } = await settleOutcome({ runs: this.options.runs, steps: this.steps, logger }, claimed, fence, outcome);
      const failure = settled.type === "failed" ? { failureReason: settled.reason, error: settled.message } : {};
      (status === "FAILED" ? logger.warn : logger.info).call(logger, "run settled", { ...where, status, ...failure });
      await this.announceNext(claimed.run);
    } catch (error) {
      // The settle transaction lost its fence: a cancellation (it acknowledges) or a takeover.
      if (error instanceof AttemptFencedError) await this.finish(claimed, fence, { type: "interrupted", status: error.reason });
      else if (isTransientDatabaseError(error)) await this.handBackFailed(claimed, fence, String(error));
      else throw error;
    }
  }

  /**
   * The database failed the attempt: its tools are stopped, and the run is handed back to resume
   * after a backoff, ahead of queued runs — or, when even that fails while the lease lasts, left to expire.
   */
  private async handBackFailed(claimed: ClaimedAttempt, fence: AttemptFence, why: string): Promise<void> {
    this.active.get(claimed.run.id)?.controller.abort(new RunStopped("HANDED_BACK", "the database failed"));
    const deps = { runs: this.options.runs, logger: this.options.logger, leaseMs: this.leaseMs, workerId: this.workerId };
    const backoffMs = await handBackAfterDatabaseFailure(deps, { claimed, fence, clock: this.leases.clock(claimed.run.id)! }, why);
    // Announced once claimable again; the sweep finds it should this process stop meanwhile.
    if (backoffMs !== null) setTimeout(() => void this.announceOrphan(claimed.run.id), backoffMs + 200).unref();
  }

  /** Announces a run given back, ahead of the queue when there is one. */
  private async announceOrphan(runId: string): Promise<void> {
    if (!this.options.queue) return this.options.announcer.announce([runId]);
    await this.options.queue.enqueue([runId], { first: true }).catch((error: unknown) => {
      this.options.logger.warn("announcing a handed-back run failed; the sweep finds it", { runId, error: String(error) });
    });
  }

  /**
   * Pauses the run at the attempt's safe point; when the pause was withdrawn meanwhile, the run is
   * handed back instead and goes on in the next attempt. Either way this worker's slot is free.
   */
  private async pause(claimed: ClaimedAttempt, fence: AttemptFence): Promise<void> {
    const where = { runId: claimed.run.id, traceId: claimed.run.id, attempt: claimed.number, worker: this.workerId };
    try {
      if (await this.options.runs.pause(claimed, fence)) {
        this.options.logger.info("run paused", where);
        return;
      }
      if (fence.lost) return;
      await this.options.runs.handBack(claimed, fence, interruption(claimed.number, this.workerId, "HANDED_BACK"));
      await this.announceOrphan(claimed.run.id);
    } catch (error) {
      if (isTransientDatabaseError(error)) await this.handBackFailed(claimed, fence, String(error));
      else throw error;
    }
  }

  /** Leaves the run WAITING for decisions on its calls, or claimable at once when they were all decided meanwhile. */
  private async wait(claimed: ClaimedAttempt, fence: AttemptFence, toolCallIds: string[]): Promise<void> {
    const where = { runId: claimed.run.id, traceId: claimed.run.id, attempt: claimed.number, worker: this.workerId };
    try {
      const waiting = await this.options.runs.awaitDecisions(claimed, fence);
      if (!waiting) await this.options.announcer.announce([claimed.run.id]);
      this.options.logger.info(waiting ? "run waits for decisions on tool calls" : "tool calls were decided before the run waited", { ...where, toolCallIds });
    } catch (error) {
      if (error instanceof AttemptFencedError) await this.finish(claimed, fence, { type: "interrupted", status: error.reason });
      else if (isTransientDatabaseError(error)) await this.handBackFailed(claimed, fence, String(error));
      else throw error;
    }
  }

  private get steps(): readonly SettleStep[] {
    return this.options.settleSteps ?? [];
  }

  /** Wakes a worker for the next queued run of the conversation, which could not start before. */
  private async announceNext(run: Pick<RunRecord, "conversationId">): Promise<void> {
    const next = await this.options.runs.nextQueued(run.conversationId);
    if (next) await this.options.announcer.announce([next]);
  }

  private listen(): () => void {
    const changes = this.options.events.subscribe("run:changes");
    void (async () => {
      for await (const change of changes) {
        if (change.status === "CANCELLED") this.active.get(change.runId)?.controller.abort(new RunStopped("CANCELLED"));
        else if (change.stop) hear(this.active.get(change.runId)?.heard, change.stop);
      }
    })();
    const stopWaking = this.wakeOnAnnouncements();
    return () => {
      void changes.return?.();
      stopWaking();
    };
  }

  /** The deployment's one wake path: the queue when there is one, otherwise the event bus. */
  private wakeOnAnnouncements(): () => void {
    if (this.options.queue) return this.options.queue.onReady(() => this.passes.wake());
    const announced = this.options.events.subscribe("run:queued");
    void (async () => {
      for await (const _ of announced) this.passes.wake();
    })();
    return () => void announced.return?.();
  }
}

/** The outcome of an attempt the database failed (an error it threw outside the executor). */
const databaseFailed = (error: unknown): Outcome => ({ type: "interrupted", status: "HANDED_BACK", databaseFailed: String(error) });
