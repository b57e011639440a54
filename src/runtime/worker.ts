// The worker (R1, R17, R18): claims runs, executes each claim as a numbered attempt under a lease
// kept alive by a heartbeat, and settles the run (attempt/settle-attempt.ts). Every write of an
// attempt goes through its fence (ports/attempt-fence.ts), so an attempt whose run was taken over
// or cancelled writes nothing;
// a heartbeat that fails or finds the lease gone aborts the attempt's model request and tool
// calls at once. An attempt that could not renew its lease stops itself by its own clock before
// its lease may expire (attempt/own-clock.ts); one the database failed hands its run back
// (attempt/hand-back.ts). A run whose worker died is claimed again once its lease expired and
// resumed from the log as the next attempt, before runs that were only queued.
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { ClaimedAttempt, ClaimedAttempts, InstanceLiveness } from "./ports/run-state.js";
import { AttemptFencedError } from "./ports/attempt-fence.js";
import { LeaseKeeper } from "./attempt/lease-keeper.js";
import { AttemptSettling } from "./attempt/settle-attempt.js";
import { isTransientDatabaseError } from "../db/transient-errors.js";
import type { SettleStep } from "./ports/run-state.js";
import type { Outcome } from "./loop/run-executor.js";
import { RunStopped } from "./loop/stop.js";
import type { RunQueue } from "./ports/run-queue.js";
import { ClaimPasses, claimInRounds } from "./claim-passes.js";
import type { WorkerOptions } from "./worker-options.js";
import { keepListening } from "../events/keep-listening.js";
import type { RunStatusMessage } from "../events/topics.js";

export type { SettleStep };

/**
 * Stops heard announced or by a lease renewal, NOW aside: CONCLUDE stops the work in hand, AFTER_TURN
 * the next model request. `steered`: a steering input was heard announced since the attempt last looked.
 */
type Heard = Record<"CONCLUDE" | "AFTER_TURN", AbortController> & { steered: boolean };
const hear = (heard: Heard | undefined, mode: string) => (mode === "CONCLUDE" || mode === "AFTER_TURN") && heard?.[mode].abort();
/** Whether a steering input was heard since the last look; looking clears it. */
const steeredSince = (heard: Heard) => () => {
  const steered = heard.steered;
  heard.steered = false;
  return steered;
};

/** A run in flight: `controller` stops the attempt. */
type Active = { controller: AbortController; heard: Heard; done: Promise<void> };

export class RunWorker {
  readonly workerId: string;
  private readonly leaseMs: number;
  private readonly leaseMarginMs: number;
  private readonly concurrency: number;
  private readonly liveness: InstanceLiveness;
  private readonly active = new Map<string, Active>();
  private readonly passes: ClaimPasses;
  private readonly leases: LeaseKeeper; // one heartbeat for every attempt held, and their clocks
  private readonly settling: AttemptSettling; // how each attempt ends once its executor returned
  private stopped = true;
  private claimWidth = 1; // what the next pass's first claim asks for (claimInRounds)
  private runsWaiting = true; // whether the last pass may have left runs waiting (a freed slot then claims)
  private unsubscribe: (() => void) | undefined;
  private announcing: Promise<void> | undefined; // the last sweep's announcements, while on their way
  private waiting: Promise<void> | undefined; // the sweep of waiting runs in progress (one at a time)

  constructor(private readonly options: WorkerOptions) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.leaseMs = options.leaseMs ?? 15_000;
    this.leaseMarginMs = options.leaseMarginMs ?? Math.min(3_000, Math.floor(this.leaseMs / 5));
    this.concurrency = options.concurrency ?? 4;
    this.liveness = options.liveness ?? (async (instance) => instance === this.workerId);
    this.leases = new LeaseKeeper({ runs: options.runs, leaseMs: this.leaseMs, marginMs: this.leaseMarginMs });
    this.settling = new AttemptSettling({
      options,
      workerId: this.workerId,
      leaseMs: this.leaseMs,
      clock: (runId) => this.leases.clock(runId),
      stop: (runId, reason) => this.active.get(runId)?.controller.abort(reason),
    });
    this.passes = new ClaimPasses({
      pass: (due) => this.pass(due),
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
    // A sweep's announcements go out before the queue closes (each waits a few seconds at most).
    await this.announcing;
    await this.waiting;
    for (const { controller } of this.active.values()) controller.abort(new RunStopped("HANDED_BACK"));
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
    // The runs handed back are announced before the queue closes (each announcement is bounded).
    await this.settling.wokenUp();
    await Promise.allSettled((this.options.companions ?? []).map((companion) => companion.stop()));
  }

  /**
   * One claim pass: the sweep when it is due, then claims while a slot is free (claim-passes.ts).
   * A pass only freed slots woke claims nothing when the last pass found no run waiting: a run
   * admitted, handed back or resumed since is announced (the wake path), one that became claimable
   * as time passed (a lease expired, a hand-back's delay) is found by the sweep's pass.
   */
  private async pass({ sweep, freedOnly }: { sweep: boolean; freedOnly: boolean }): Promise<void> {
    if (sweep) await this.sweep();
    if (freedOnly && !this.runsWaiting) return;
    // Until this pass's claims say otherwise (a claim that failed leaves it so).
    this.runsWaiting = true;
    const { width, runsWaiting } = await claimInRounds({
      free: () => (this.stopped ? 0 : this.concurrency - this.active.size),
      claim: (count) => (this.options.queue ? this.claimDelivered(this.options.queue, count) : this.claimMany(count)),
      begin: (claimed) => this.begin(claimed),
      from: this.claimWidth,
    });
    this.claimWidth = width;
    this.runsWaiting = runsWaiting;
  }

  /** Claims up to `count` runs in one transaction. */
  private claimMany(count: number): Promise<ClaimedAttempts> {
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
   * Claims the fairest claimable runs, whichever runs were delivered, then takes as many deliveries
   * as it claimed runs: deliveries come oldest first across principals, and claiming them as
   * delivered would let one principal's backlog delay everybody else's runs. A delivered run that
   * is not claimed now stays QUEUED in the table, where every later pass looks for it; orphaned
   * runs come first in the claim's own order. A claim that took nothing takes no delivery (no
   * statement): the jobs left wait for the claims that take runs.
   */
  private async claimDelivered(queue: RunQueue, count: number): Promise<ClaimedAttempts> {
    const claimed = await this.claimMany(count);
    // Neither the deliveries nor their acknowledgements are waited for: the runs claimed start now.
    if (claimed.length > 0)
      void queue
        .take(claimed.length)
        .then((deliveries) => {
          for (const delivery of deliveries) delivery.done().catch(() => undefined);
        })
        .catch(() => undefined);
    return claimed;
  }

  /**
   * Releases the leases of runs that ended while their attempt's instance was gone, starts the
   * sweep of waiting runs (sweepWaiting) unless one is in progress, and — with a queue — announces
   * runs that are queued, or running under an expired lease, so a worker claims them.
   */
  private async sweep(): Promise<void> {
    await this.options.runs.releaseAbandoned(this.liveness, this.steps);
    // Waiting runs are swept beside the claims: a backlog of expired requests (each run's decided
    // under its lock) does not hold back the runs this pass claims. One such sweep at a time: the
    // one in progress goes on while it finds requests due, and takes the place of one due meanwhile.
    this.waiting ??= this.sweepWaiting()
      .catch((error: unknown) => this.options.logger.error("sweeping waiting runs failed", { error: String(error) }))
      .finally(() => (this.waiting = undefined));
    if (!this.options.queue) return;
    // Every pass claims from the run table, so a few announcements wake idle workers elsewhere;
    // announcing every claimable run (one job each) would hold this pass up behind a long backlog.
    // Orphaned runs are announced ahead of the queue.
    // The announcements are not waited for: a pass claims from the run table whatever the queue
    // does, and a queue whose link hangs must not stop every claim. One sweep's announcements at a
    // time: while they are on their way, later sweeps send none.
    if (this.announcing) return;
    const claimable = await this.options.runs.claimable(this.leaseMarginMs, this.concurrency);
    const orphaned = claimable.filter((run) => run.orphaned).map((run) => run.id);
    const queued = claimable.filter((run) => !run.orphaned).map((run) => run.id);
    const queue = this.options.queue;
    this.announcing = (async () => {
      if (orphaned.length > 0) await queue.enqueue(orphaned, { first: true });
      if (queued.length > 0) await queue.enqueue(queued);
    })()
      .catch((error: unknown) => this.options.logger.warn("announcing claimable runs failed; the next sweep announces them", { error: String(error) }))
      .finally(() => (this.announcing = undefined));
  }

  /**
   * Rejects approval requests past their time (their runs resume) and ends waiting runs past their
   * deadline. Each expiry sweep is bounded; while one decides anything, the next follows at once
   * (after the event loop's turn, so claims and renewals go on between them) until nothing is due.
   */
  private async sweepWaiting(): Promise<void> {
    let expired = 0;
    for (let decided = -1; decided !== 0 && !this.stopped; ) {
      if (decided > 0) await new Promise((resolve) => setImmediate(resolve));
      decided = (await this.options.approvals?.expireDue(this.options.now?.() ?? new Date())) ?? 0;
      expired += decided;
    }
    if (expired) this.options.logger.info("rejected tool calls nobody decided in time", { count: expired });
    const now = this.options.now?.() ?? new Date();
    for (const run of await this.options.runs.timeOutWaiting(now, this.steps)) {
      this.options.logger.info("run settled", { runId: run.id, traceId: run.id, status: "TIMED_OUT", while: "waiting for decisions" });
      await this.settling.announceNext(run);
    }
  }

  private begin(claimed: ClaimedAttempt): void {
    const controller = new AbortController();
    const heard: Heard = { CONCLUDE: new AbortController(), AFTER_TURN: new AbortController(), steered: false };
    const done = this.execute(claimed, controller, heard, claimed.leaseSentAt).finally(() => {
      this.active.delete(claimed.run.id);
      // A slot is free: a ready run that found none waiting takes it now.
      if (!this.stopped) this.passes.wake({ freed: true });
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
    const stops = { conclude: heard.CONCLUDE.signal, afterTurn: heard.AFTER_TURN.signal };
    const context = { ...claimed, fence, signal: controller.signal, ...stops, steered: steeredSince(heard) };
    const remaining = run.deadlineAt.getTime() - Date.now();
    const deadline = setTimeout(() => controller.abort(new RunStopped("TIMED_OUT")), Math.max(0, remaining));
    // A run's trace shares its id: logs and traces join on either.
    const where = { runId: run.id, traceId: run.id, attempt: claimed.number, worker: this.workerId };
    try {
      logger.info("attempt started", where);
      // Once its executor returned, whatever of the attempt still listens (a tool it left behind) is
      // stopped before the run is settled and another attempt may take it.
      const outcome = await this.options.executor.execute(context).finally(() => controller.abort(ATTEMPT_ENDED));
      await this.settling.finish(claimed, fence, outcome);
    } catch (error) {
      if (error instanceof AttemptFencedError) await this.settling.finish(claimed, fence, { type: "interrupted", status: error.reason });
      else if (isTransientDatabaseError(error)) await this.settling.finish(claimed, fence, databaseFailed(error)).catch(() => undefined);
      else logger.error("attempt failed", { ...where, error: String(error) });
    } finally {
      clearTimeout(deadline);
      lease.stop();
    }
  }

  private get steps(): readonly SettleStep[] {
    return this.options.settleSteps ?? [];
  }

  /**
   * Listens for stops, cancellations and steering inputs of the runs in flight, and for runs
   * announced ready. A subscription that fails is made again (events/keep-listening.ts); what was
   * announced in between is looked for: a stop or cancellation is found by the next lease renewal,
   * a steering input by each attempt's next model request, a queued run by a claim pass at once.
   */
  private listen(): () => void {
    const { events, logger } = this.options;
    const changes = keepListening({
      what: "run changes (stops, cancellations, steering)",
      subscribe: () => events.subscribe("run:changes"),
      onEvent: (change) => this.changed(change),
      onResumed: () => {
        for (const active of this.active.values()) active.heard.steered = true;
        for (const companion of this.options.companions ?? []) companion.unheard?.();
      },
      logger,
    });
    const stopWaking = this.wakeOnAnnouncements();
    return () => {
      void changes.stop();
      stopWaking();
    };
  }

  private changed(change: RunStatusMessage): void {
    for (const companion of this.options.companions ?? []) companion.heard?.(change);
    const active = this.active.get(change.runId);
    if (!active) return;
    if (change.status === "CANCELLED") active.controller.abort(new RunStopped("CANCELLED"));
    else if (change.stop) hear(active.heard, change.stop);
    else if (change.steered) active.heard.steered = true;
  }

  /** The deployment's one wake path: the queue when there is one, otherwise the event bus. */
  private wakeOnAnnouncements(): () => void {
    if (this.options.queue) return this.options.queue.onReady(() => this.passes.wake());
    const wake = () => this.passes.wake();
    const announced = keepListening({
      what: "runs announced ready",
      subscribe: () => this.options.events.subscribe("run:queued"),
      onEvent: wake,
      onResumed: wake,
      logger: this.options.logger,
    });
    return () => void announced.stop();
  }
}

/** Why an attempt's signal is aborted once its executor returned (unless a stop came first). */
const ATTEMPT_ENDED = new RunStopped("HANDED_BACK", "its attempt ended");

/** The outcome of an attempt the database failed (an error it threw outside the executor). */
const databaseFailed = (error: unknown): Outcome => ({ type: "interrupted", status: "HANDED_BACK", databaseFailed: String(error) });
