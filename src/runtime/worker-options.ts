// What a run worker is built from (runtime.ts assembles it): the run rows, the executor, where
// runs are announced and delivered, and the timings of its lease and sweep.
import type { RunAnnouncer } from "../domain/runs/run-announcer.js";
import type { EventBus, RunStatusMessage } from "../events/topics.js";
import type { Logger } from "../logger.js";
import type { RunExecutor } from "./loop/run-executor.js";
import type { RunQueue } from "./ports/run-queue.js";
import type { InstanceLiveness, RunState, SettleStep } from "./ports/run-state.js";

export type WorkerOptions = {
  /** The run rows: claims, leases, settling. */
  runs: RunState;
  executor: RunExecutor;
  events: EventBus;
  logger: Logger;
  leaseMs?: number;
  /** The lease's safety margin (default: a fifth of the lease, at most 3 s; see attempt/own-clock.ts). */
  leaseMarginMs?: number;
  concurrency?: number;
  /**
   * Runs one principal may have running at once, counted across every worker (default: this
   * worker's concurrency). Claims interleave principals: the one with the fewest running runs first.
   */
  maxRunningPerPrincipal?: number;
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
  /**
   * Background jobs that run while the worker runs (the spill and artifact sweepers, …); one may
   * hear every run's status changes the worker hears (`heard`), and be told when changes may have
   * gone unheard (`unheard`: the worker's subscription was made again).
   */
  companions?: { start(): void; stop(): Promise<void>; heard?(change: RunStatusMessage): void; unheard?(): void }[];
  /** Where the runs this worker makes ready again are announced (the next of a conversation, a hand-back). */
  announcer: RunAnnouncer;
  /**
   * Where ready runs are announced across processes (S2, PostgreSQL deployments). With it, the
   * worker wakes when the queue says runs were announced and claims the runs it delivers; without
   * it (the embedded default, one process), it wakes on the event bus's run:queued and claims
   * from the run table. One wake path either way.
   */
  queue?: RunQueue;
  /**
   * How often the lease sweep runs (default leaseMs / 3): it releases abandoned leases and finds
   * runs whose lease expired or whose announcement was lost (with a queue, by announcing them
   * again). It is the wake path's one fallback: a ready run nobody announced (the run after a
   * queued one that was cancelled, a lost announcement) waits for the next sweep.
   */
  sweepMs?: number;
  /**
   * Human approval of tool calls: the sweep rejects requests nobody decided in time, and ends
   * TIMED_OUT the WAITING runs whose deadline passed.
   */
  approvals?: { expireDue(now: Date): Promise<number> };
  /** The clock the sweep decides expiry and deadlines of waiting runs by (tests move it). */
  now?: () => Date;
};
