// The worker (R1, R17, R18): claims runs, executes each claim as a numbered attempt under a lease
// kept alive by a heartbeat, and settles the run. Every write of an attempt goes through its
// fence (attempt/fence.ts), so an attempt whose run was taken over or cancelled writes nothing;
// a heartbeat that fails or finds the lease gone aborts the attempt's model request and tool
// calls at once. A run whose worker died is claimed again once its lease expired and resumed
// from the log as the next attempt.
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { EventBus } from "../events/topics.js";
import type { PrismaClient, Run } from "../generated/prisma/client.js";
import type { Logger } from "../logger.js";
import { type ClaimedAttempt, claimRun, type InstanceLiveness, interruption, releaseAbandoned } from "./attempt/claim.js";
import { AttemptFence, AttemptFencedError } from "./attempt/fence.js";
import { handBackAttempt, releaseCancelled, settleAttempt, type SettleStep } from "./attempt/settle.js";
import type { Outcome, RunExecutor } from "./loop/run-executor.js";
import { RunStopped } from "./loop/stop.js";
import type { RunQueue } from "./ports/run-queue.js";
import type { PrismaTraceRecorder } from "./trace/prisma-trace-recorder.js";

export type { SettleStep };

export type WorkerOptions = {
  prisma: PrismaClient;
  executor: RunExecutor;
  recorder: PrismaTraceRecorder;
  events: EventBus;
  logger: Logger;
  leaseMs?: number;
  pollMs?: number;
  concurrency?: number;
  /** This instance's id: the lease owner of its attempts (see Database.instanceId). */
  workerId?: string;
  /** Whether an instance still has a database session: tells a crashed attempt from one that lost its lease. */
  liveness?: InstanceLiveness;
  /**
   * Steps of settling that belong to other parts of the runtime (publishing the answer, deciding
   * proposals, releasing spills). They run in the attempt's fenced settle transaction, with the
   * terminal status: a run is settled with all of their effects or none.
   */
  settleSteps?: SettleStep[];
  /** Background jobs that run while the worker runs (the spill and artifact sweepers, …). */
  companions?: { start(): void; stop(): Promise<void> }[];
  /**
   * Where ready runs are announced across processes (S2). Without it the worker polls the run
   * table; with it, it claims the runs the queue delivers and sweeps the table now and then for
   * runs queued without an announcement or whose lease expired.
   */
  queue?: RunQueue;
  /** How often the worker sweeps for unannounced runs and releases abandoned leases (default leaseMs / 3). */
  sweepMs?: number;
};

type Active = { controller: AbortController; done: Promise<void> };

export class RunWorker {
  readonly workerId: string;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly concurrency: number;
  private readonly liveness: InstanceLiveness;
  private readonly active = new Map<string, Active>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;
  private nextSweepAt = 0;
  /** The poll (sweep and claims) in progress, if any. */
  private polling: Promise<void> | undefined;
  private wokenWhilePolling = false;

  constructor(private readonly options: WorkerOptions) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.leaseMs = options.leaseMs ?? 15_000;
    this.pollMs = options.pollMs ?? 500;
    this.concurrency = options.concurrency ?? 4;
    this.liveness = options.liveness ?? (async (instance) => instance === this.workerId);
  }

  start(): void {
    this.stopped = false;
    this.unsubscribe = this.listen();
    for (const companion of this.options.companions ?? []) companion.start();
    this.schedule(0);
  }

  /**
   * Stops claiming, interrupts runs in flight and hands their leases back for another worker.
   * A claim in progress is awaited first (its transaction must end before the database closes),
   * and a run it claimed is handed back with the others.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.unsubscribe?.();
    await this.polling;
    for (const { controller } of this.active.values()) controller.abort(new RunStopped("HANDED_BACK"));
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
    await Promise.allSettled((this.options.companions ?? []).map((companion) => companion.stop()));
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      // The poll in progress schedules the next one, at once when woken meanwhile.
      if (this.polling) return void (this.wokenWhilePolling = true);
      this.polling = this.poll().finally(() => (this.polling = undefined));
    }, delayMs);
  }

  private async poll(): Promise<void> {
    try {
      if (Date.now() >= this.nextSweepAt) await this.sweep();
      while (!this.stopped && this.active.size < this.concurrency) {
        const claimed = this.options.queue ? await this.claimDelivered(this.options.queue) : await this.claim();
        if (!claimed) break;
        this.begin(claimed);
      }
    } catch (error) {
      this.options.logger.error("claiming runs failed", { error: String(error) });
    }
    this.schedule(this.wokenWhilePolling ? 0 : this.pollMs);
    this.wokenWhilePolling = false;
  }

  private claim(runId?: string): Promise<ClaimedAttempt | null> {
    return claimRun(
      {
        prisma: this.options.prisma,
        events: this.options.events,
        announce: (changes) => this.options.recorder.announce(changes),
        counters: this.options.recorder.counters,
        workerId: this.workerId,
        leaseMs: this.leaseMs,
        liveness: this.liveness,
        describeRun: (run) => this.options.executor.describeRun(run),
      },
      runId,
    );
  }

  /** Claims the next delivered run that is still claimable; deliveries of any other run are no-ops. */
  private async claimDelivered(queue: RunQueue): Promise<ClaimedAttempt | null> {
    for (;;) {
      const [delivery] = await queue.take(1);
      if (!delivery) return null;
      const claimed = await this.claim(delivery.runId).finally(() => delivery.done().catch(() => undefined));
      if (claimed) return claimed;
    }
  }

  /**
   * Releases the leases of runs that ended while their attempt's instance was gone, and — with a
   * queue — announces runs that are queued, or running under an expired lease, so a worker claims them.
   */
  private async sweep(): Promise<void> {
    this.nextSweepAt = Date.now() + (this.options.sweepMs ?? this.leaseMs / 3);
    await releaseAbandoned({ ...this.settleDeps(), liveness: this.liveness });
    if (!this.options.queue) return;
    const rows = await this.options.prisma.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id FROM run WHERE status = 'QUEUED' OR (status = 'RUNNING' AND lease_expires_at < now())
        ORDER BY created_at LIMIT 1000`,
    );
    if (rows.length > 0) await this.options.queue.enqueue(rows.map((row) => row.id));
  }

  private begin(claimed: ClaimedAttempt): void {
    const controller = new AbortController();
    const done = this.execute(claimed, controller).finally(() => this.active.delete(claimed.run.id));
    this.active.set(claimed.run.id, { controller, done });
  }

  private async execute(claimed: ClaimedAttempt, controller: AbortController): Promise<void> {
    const { logger, prisma } = this.options;
    const { run } = claimed;
    const holder = { runId: run.id, attempt: claimed.number, workerId: this.workerId };
    const fence = new AttemptFence(prisma, holder, (stop) => {
      if (!controller.signal.aborted) controller.abort(stop);
    });
    const context = { run, number: claimed.number, root: claimed.root, span: claimed.span, fence, signal: controller.signal };
    const remaining = run.deadlineAt.getTime() - Date.now();
    const deadline = setTimeout(() => controller.abort(new RunStopped("TIMED_OUT")), Math.max(0, remaining));
    const heartbeat = setInterval(() => void this.heartbeat(fence), Math.max(50, this.leaseMs / 3));
    // A run's trace shares its id: logs and traces join on either.
    const where = { runId: run.id, traceId: run.id, attempt: claimed.number, worker: this.workerId };
    try {
      logger.info("attempt started", where);
      const outcome = await this.options.executor.execute(context);
      await this.finish(claimed, fence, outcome);
    } catch (error) {
      if (error instanceof AttemptFencedError) await this.finish(claimed, fence, { type: "interrupted", status: error.reason });
      else logger.error("attempt failed", { ...where, error: String(error) });
    } finally {
      clearTimeout(deadline);
      clearInterval(heartbeat);
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
    if (lost?.reason === "CANCELLED" || (outcome.type === "interrupted" && outcome.status === "CANCELLED")) {
      await releaseCancelled(this.settleDeps(), claimed.run, {
        attempt: claimed.number,
        owner: this.workerId,
        outcome: "COMPLETED",
        spanStatus: "CANCELLED",
        reason: "the run was cancelled",
      });
      logger.info("attempt stopped: the run was cancelled", where);
      await this.announceNext(claimed.run);
      return;
    }
    if (outcome.type === "interrupted" && outcome.status === "HANDED_BACK") {
      await handBackAttempt(this.settleDeps(), claimed, fence, interruption(claimed.number, this.workerId, "HANDED_BACK"));
      await this.options.queue?.enqueue([claimed.run.id]).catch(() => undefined);
      logger.info("run handed back", where);
      return;
    }
    try {
      const status = await this.settle(claimed, fence, outcome);
      const failure = outcome.type === "failed" ? { failureReason: outcome.reason, error: outcome.message } : {};
      (status === "FAILED" ? logger.warn : logger.info).call(logger, "run settled", { ...where, status, ...failure });
      await this.announceNext(claimed.run);
    } catch (error) {
      // The settle transaction lost its fence: a cancellation (it acknowledges) or a takeover.
      if (error instanceof AttemptFencedError) await this.finish(claimed, fence, { type: "interrupted", status: error.reason });
      else throw error;
    }
  }

  /**
   * Settles as the outcome says. When a settle step itself fails (the answer cannot be published,
   * say), none of that settling's effects stay and the run ends FAILED with INTERNAL_ERROR (its
   * proposals dropped, its spills released; with no settle step at all if even that fails),
   * rather than staying RUNNING to be claimed, resumed and fail to settle again forever.
   */
  private async settle(claimed: ClaimedAttempt, fence: AttemptFence, outcome: Outcome) {
    try {
      return await settleAttempt(this.settleDeps(), claimed, fence, outcome);
    } catch (error) {
      if (error instanceof AttemptFencedError) throw error;
      this.options.logger.error("settling failed", { runId: claimed.run.id, attempt: claimed.number, error: describe(error) });
      const failed: Outcome = { type: "failed", reason: "INTERNAL_ERROR", message: `settling the run failed: ${describe(error)}` };
      return settleAttempt(this.settleDeps(), claimed, fence, failed).catch((again: unknown) => {
        if (again instanceof AttemptFencedError) throw again;
        return settleAttempt({ ...this.settleDeps(), steps: [] }, claimed, fence, failed);
      });
    }
  }

  private settleDeps() {
    const { prisma, events, recorder } = this.options;
    return {
      prisma,
      events,
      steps: this.options.settleSteps ?? [],
      announce: (changes: Parameters<PrismaTraceRecorder["announce"]>[0]) => recorder.announce(changes),
      exportEnded: (spanIds: string[]) => recorder.exportEnded(spanIds),
    };
  }

  /** Wakes a worker for the next queued run of the conversation, which could not start before. */
  private async announceNext(run: Run): Promise<void> {
    const next = await this.options.prisma.run.findFirst({
      where: { conversationId: run.conversationId, status: "QUEUED" },
      orderBy: [{ createdAt: "asc" }, { id: "asc" }],
      select: { id: true },
    });
    if (!next) return;
    this.options.events.publish("run:queued", { runId: next.id });
    await this.options.queue?.enqueue([next.id]).catch(() => undefined);
  }

  /** Extends the lease; a failure, or finding the run no longer held, aborts the attempt at once. */
  private async heartbeat(fence: AttemptFence): Promise<void> {
    if (fence.lost) return;
    const { runId, attempt, workerId } = fence.holder;
    let verdict: Parameters<AttemptFence["lose"]>;
    try {
      const rows = await this.options.prisma.$queryRawUnsafe<{ id: string }[]>(
        `UPDATE run SET lease_expires_at = now() + make_interval(secs => $4::double precision / 1000)
          WHERE id = $1 AND attempt = $2 AND lease_owner = $3 AND status = 'RUNNING' RETURNING id`,
        runId,
        attempt,
        workerId,
        this.leaseMs,
      );
      if (rows.length > 0) return;
      const run = await this.options.prisma.run.findUnique({ where: { id: runId }, select: { status: true, attempt: true } });
      verdict =
        run?.status === "CANCELLED" && run.attempt === attempt
          ? ["CANCELLED", "it was cancelled"]
          : ["LEASE_LOST", `the heartbeat found the run ${run ? `${run.status} under attempt ${run.attempt}` : "gone"}`];
    } catch (error) {
      verdict = ["LEASE_LOST", `the heartbeat failed: ${error instanceof Error ? error.message : String(error)}`];
    }
    try {
      fence.lose(...verdict);
    } catch {
      // lose() throws to stop whoever writes; here the abort it caused is what counts.
    }
  }

  private listen(): () => void {
    const changes = this.options.events.subscribe("run:changes");
    void (async () => {
      for await (const change of changes) {
        if (change.status === "CANCELLED") this.active.get(change.runId)?.controller.abort(new RunStopped("CANCELLED"));
      }
    })();
    const wake = this.options.events.subscribe("run:queued");
    void (async () => {
      for await (const _ of wake) this.schedule(0);
    })();
    return () => {
      void changes.return?.();
      void wake.return?.();
    };
  }
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
