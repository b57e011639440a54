// The worker (R1, R17): claims admitted runs under a lease, keeps the lease alive with a
// heartbeat while executing, and settles each run in a terminal state. A run whose worker died
// (its lease expired) is claimed again and resumed from the log; the lease guard on every
// write means two workers never execute one run at the same time.
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { type EventBus, publishRunStatus, type RunStatusName } from "../events/topics.js";
import type { PrismaClient, Run } from "../generated/prisma/client.js";
import type { Logger } from "../logger.js";
import { type Outcome, type RunExecutor, RunStopped } from "./loop/run-executor.js";
import type { RunQueue } from "./ports/run-queue.js";
import type { PrismaTraceRecorder } from "./trace/prisma-trace-recorder.js";

export type WorkerOptions = {
  prisma: PrismaClient;
  executor: RunExecutor;
  recorder: PrismaTraceRecorder;
  events: EventBus;
  logger: Logger;
  leaseMs?: number;
  pollMs?: number;
  concurrency?: number;
  workerId?: string;
  /**
   * Steps of settling that belong to other parts of the runtime (publishing the answer, releasing
   * spills, …). Each runs before the terminal status is written, so whoever sees the run settled
   * sees their effects; each must be idempotent, because a worker that dies in between leaves
   * the run to another worker, which settles it again.
   */
  settleSteps?: SettleStep[];
  /** Background jobs that run while the worker runs (the spill sweeper, …). */
  companions?: { start(): void; stop(): Promise<void> }[];
  /**
   * Where ready runs are announced across processes (S2). Without it the worker polls the run
   * table; with it, it claims the runs the queue delivers and sweeps the table now and then for
   * runs queued without an announcement or whose lease expired.
   */
  queue?: RunQueue;
  /** How often a queue-driven worker sweeps for unannounced or expired runs (default leaseMs / 3). */
  sweepMs?: number;
};

export type SettleStep = (run: Run, outcome: Outcome, status: RunStatusName) => Promise<void>;

type Active = { controller: AbortController; done: Promise<void> };

export class RunWorker {
  readonly workerId: string;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly concurrency: number;
  private readonly active = new Map<string, Active>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private unsubscribe: (() => void) | undefined;
  private nextSweepAt = 0;

  constructor(private readonly options: WorkerOptions) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.leaseMs = options.leaseMs ?? 15_000;
    this.pollMs = options.pollMs ?? 500;
    this.concurrency = options.concurrency ?? 4;
  }

  start(): void {
    this.stopped = false;
    this.unsubscribe = this.listenForCancellations();
    for (const companion of this.options.companions ?? []) companion.start();
    this.schedule(0);
  }

  /** Stops claiming, interrupts runs in flight and hands their leases back for another worker. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.unsubscribe?.();
    for (const { controller } of this.active.values()) controller.abort(new RunStopped("HANDED_BACK"));
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
    await Promise.allSettled((this.options.companions ?? []).map((companion) => companion.stop()));
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.poll(), delayMs);
  }

  private async poll(): Promise<void> {
    try {
      if (this.options.queue && Date.now() >= this.nextSweepAt) await this.sweep(this.options.queue);
      while (!this.stopped && this.active.size < this.concurrency) {
        const run = this.options.queue ? await this.claimDelivered(this.options.queue) : await this.claim();
        if (!run) break;
        this.begin(run);
      }
    } catch (error) {
      this.options.logger.error("claiming runs failed", { error: String(error) });
    }
    this.schedule(this.pollMs);
  }

  /** Claims the next delivered run that is still claimable; deliveries of any other run are no-ops. */
  private async claimDelivered(queue: RunQueue): Promise<Run | null> {
    for (;;) {
      const [delivery] = await queue.take(1);
      if (!delivery) return null;
      const run = await this.claim(delivery.runId).finally(() => delivery.done().catch(() => undefined));
      if (run) return run;
    }
  }

  /** Announces runs that are queued, or running under an expired lease, so a worker claims them. */
  private async sweep(queue: RunQueue): Promise<void> {
    this.nextSweepAt = Date.now() + (this.options.sweepMs ?? this.leaseMs / 3);
    const rows = await this.options.prisma.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id FROM run WHERE status = 'QUEUED' OR (status = 'RUNNING' AND lease_expires_at < now())
        ORDER BY created_at LIMIT 1000`,
    );
    if (rows.length > 0) await queue.enqueue(rows.map((row) => row.id));
  }

  /**
   * Takes the oldest queued run, or a running one whose lease expired, with SKIP LOCKED
   * (or only the given run, when it is claimable).
   */
  private async claim(runId?: string): Promise<Run | null> {
    const rows = await this.options.prisma.$queryRawUnsafe<{ id: string }[]>(
      `UPDATE run SET status = 'RUNNING', lease_owner = $1,
              lease_expires_at = now() + make_interval(secs => $2::double precision / 1000),
              started_at = COALESCE(started_at, now())
        WHERE id = (SELECT id FROM run
                     WHERE (status = 'QUEUED' OR (status = 'RUNNING' AND lease_expires_at < now()))
                       AND ($3::text IS NULL OR id = $3)
                     ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      this.workerId,
      this.leaseMs,
      runId ?? null,
    );
    const [row] = rows;
    return row ? this.options.prisma.run.findUniqueOrThrow({ where: { id: row.id } }) : null;
  }

  private begin(run: Run): void {
    const controller = new AbortController();
    const done = this.execute(run, controller).finally(() => this.active.delete(run.id));
    this.active.set(run.id, { controller, done });
    this.publish(run.id, "RUNNING");
  }

  private async execute(run: Run, controller: AbortController): Promise<void> {
    const { logger } = this.options;
    const remaining = run.deadlineAt.getTime() - Date.now();
    const deadline = setTimeout(() => controller.abort(new RunStopped("TIMED_OUT")), Math.max(0, remaining));
    const heartbeat = setInterval(() => void this.heartbeat(run.id, controller), Math.max(50, this.leaseMs / 3));
    try {
      // A run's trace shares its id (PrismaTraceRecorder.traceFor): logs and traces join on either.
      logger.info("run started", { runId: run.id, traceId: run.id, worker: this.workerId });
      const outcome = await this.options.executor.execute(run, controller.signal);
      if (outcome.type === "interrupted" && outcome.status === "HANDED_BACK") await this.handBack(run);
      else await this.settle(run, outcome);
    } catch (error) {
      logger.error("run execution failed", { runId: run.id, error: String(error) });
      await this.settle(run, { type: "failed", reason: "MODEL_ERROR", message: String(error) }).catch(() => undefined);
    } finally {
      clearTimeout(deadline);
      clearInterval(heartbeat);
    }
  }

  /** Extends the lease; stops the run if it was cancelled elsewhere or the lease was lost. */
  private async heartbeat(runId: string, controller: AbortController): Promise<void> {
    const rows = await this.options.prisma
      .$queryRawUnsafe<{ status: string }[]>(
        `UPDATE run SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
          WHERE id = $1 AND lease_owner = $2 AND status = 'RUNNING' RETURNING status`,
        runId,
        this.workerId,
        this.leaseMs,
      )
      .catch(() => null);
    if (rows && rows.length === 0 && !controller.signal.aborted) controller.abort(new RunStopped("CANCELLED"));
  }

  /** Releases the lease at once, so another worker resumes the run from its log without waiting. */
  private async handBack(run: Run): Promise<void> {
    await this.options.prisma.run.updateMany({
      where: { id: run.id, leaseOwner: this.workerId, status: "RUNNING" },
      data: { leaseOwner: null, leaseExpiresAt: new Date(0) },
    });
    await this.options.queue?.enqueue([run.id]).catch(() => undefined);
    this.options.logger.info("run handed back", { runId: run.id, worker: this.workerId });
  }

  /** Records the terminal state, only while this worker still holds the run. */
  private async settle(run: Run, outcome: Outcome): Promise<void> {
    const status: RunStatusName =
      outcome.type === "final"
        ? "SUCCEEDED"
        : outcome.type === "interrupted" && outcome.status !== "HANDED_BACK"
          ? outcome.status
          : "FAILED";
    const current = await this.options.prisma.run.findUnique({ where: { id: run.id }, select: { leaseOwner: true, status: true } });
    const stillMine = current?.leaseOwner === this.workerId && current.status === "RUNNING";
    // A worker that lost the lease leaves the trace to the one that took the run over. The
    // trace ends before the status changes, so whoever sees the run settled sees its whole trace.
    if (stillMine || current?.status === "CANCELLED") {
      for (const step of this.options.settleSteps ?? []) {
        await step(run, outcome, status).catch((error: unknown) =>
          this.options.logger.error("a settle step failed", { runId: run.id, error: String(error) }),
        );
      }
      const trace = await this.options.prisma.trace.findUnique({ where: { runId: run.id } });
      if (trace && !trace.endedAt) await this.options.recorder.endTrace(trace.id);
    }
    const settled = await this.options.prisma.run.updateMany({
      where: { id: run.id, leaseOwner: this.workerId, status: "RUNNING" },
      data: {
        status,
        answer: outcome.type === "final" ? outcome.answer : null,
        failureReason: outcome.type === "failed" ? outcome.reason : null,
        finishedAt: new Date(),
        leaseOwner: null,
        leaseExpiresAt: null,
      },
    });
    if (settled.count > 0) this.publish(run.id, status);
    this.options.logger.info("run settled", { runId: run.id, traceId: run.id, status, worker: this.workerId });
  }

  private listenForCancellations(): () => void {
    const iterator = this.options.events.subscribe("run:changes");
    void (async () => {
      for await (const change of iterator) {
        if (change.status === "CANCELLED") this.active.get(change.runId)?.controller.abort(new RunStopped("CANCELLED"));
      }
    })();
    const wake = this.options.events.subscribe("run:queued");
    void (async () => {
      for await (const _ of wake) this.schedule(0);
    })();
    return () => {
      void iterator.return?.();
      void wake.return?.();
    };
  }

  private publish(runId: string, status: RunStatusName): void {
    publishRunStatus(this.options.events, runId, status);
  }
}
