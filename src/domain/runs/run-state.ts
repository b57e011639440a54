// The run state in the database (R17–R19): the run row, its attempts and its conversation's execution slot.
// Claims and settling write the trace in their own transactions and announce it through `trace`.
import { type EventPublisher, publishRunListChange, type RunStatusName } from "../../events/topics.js";
import type { PrismaClient, Run } from "../../generated/prisma/client.js";
import { type ClaimedAttempt, type ClaimedAttempts, claimRun, claimRuns, type InstanceLiveness, releaseAbandoned } from "./claim.js";
import type { AttemptFence, Holder, OnLost, Transact } from "./attempt-fence.js";
import { PrismaAttemptFence } from "./attempt-fence.js";
import { type CancelledEnding, handBackAttempt, pauseAttempt, releaseCancelled, type SettleDeps, settleAttempt, type SettleStep } from "./settle.js";
import { budgetTokens, type Claimant, MAX_TOKEN_COUNT, type EndedRun, type LeaseTerms, type LeaseVerdict, type Outcome } from "./vocabulary.js";
import { awaitDecisions, timeOutWaiting } from "./wait.js";
import type { TraceChange } from "../trace/trace-writes.js";
import { leaseExpiredSql } from "./lease-expired.js";
import { renewLeases } from "./lease-renewal.js";
import { TERMINAL_STATUSES } from "./stop-reasons.js";
import { nextQueuedReader } from "./next-queued.js";
import { type DeliveredEntry, deliverInputsIn } from "./steering.js";
import { type CarriedRead, inOneStatement, within } from "../transaction.js";
import { holdsRunSql } from "./holder.js";
import { carriedRunRequests, readRunRequests, type RunRequests } from "./run-requests.js";
import type { SpanRef } from "./vocabulary.js";

export type PrismaRunStateDeps = {
  prisma: PrismaClient;
  events: EventPublisher;
  /** Where committed trace changes are announced, and spans ended outside an attempt exported (the runtime's trace). */
  trace: { announce(changes: readonly (TraceChange | null)[]): void; exportEnded(spanIds: string[]): void };
  /** The operator's default daily cost limit per principal (DAILY_COST_LIMIT, USD); null: none. */
  dailyCostLimit?: string | null;
};

/** The run state of the runtime's RunState port (runtime/ports/run-state.ts), in the database. */
export class PrismaRunState {
  private readonly readNextQueued: (conversationId: string) => Promise<string | null>;

  constructor(private readonly deps: PrismaRunStateDeps) {
    this.readNextQueued = nextQueuedReader(deps.prisma);
  }

  private settleDeps(steps: readonly SettleStep[] = []): SettleDeps {
    const { prisma, events, trace } = this.deps;
    return { prisma, events, steps, announce: (changes) => trace.announce(changes), exportEnded: (spanIds) => trace.exportEnded(spanIds) };
  }

  claim(claimant: Claimant, runId?: string): Promise<ClaimedAttempt | null> {
    const { prisma, events, trace, dailyCostLimit } = this.deps;
    return claimRun({ prisma, events, announce: (changes) => trace.announce(changes), dailyCostLimit, ...claimant }, runId);
  }

  claimMany(claimant: Claimant, count: number): Promise<ClaimedAttempts> {
    const { prisma, events, trace, dailyCostLimit } = this.deps;
    return claimRuns({ prisma, events, announce: (changes) => trace.announce(changes), dailyCostLimit, ...claimant }, count);
  }

  fence(holder: Holder, onLost: OnLost): AttemptFence {
    return new PrismaAttemptFence(this.deps.prisma, holder, onLost);
  }

  /** One statement for every attempt the worker holds; the stop requested of each run comes back with it (lease-renewal.ts). */
  renewLeases(holders: readonly Holder[], lease: LeaseTerms, waiting?: boolean): Promise<(LeaseVerdict | null)[]> {
    return renewLeases(this.deps.prisma, holders, lease, waiting);
  }

  settle(claimed: ClaimedAttempt, fence: AttemptFence, outcome: Outcome, steps: readonly SettleStep[]): Promise<RunStatusName> {
    return settleAttempt(this.settleDeps(steps), claimed, fence, outcome);
  }

  handBack(claimed: ClaimedAttempt, fence: AttemptFence, reason: string, delayAfter?: (handedBackBefore: number) => number): Promise<number | null> {
    return handBackAttempt(this.settleDeps(), claimed, fence, reason, delayAfter);
  }

  pause(claimed: ClaimedAttempt, fence: AttemptFence): Promise<boolean> {
    return pauseAttempt(this.settleDeps(), claimed, fence);
  }

  awaitDecisions(claimed: ClaimedAttempt, fence: AttemptFence): Promise<boolean> {
    return awaitDecisions(this.settleDeps(), claimed, fence);
  }

  timeOutWaiting(now: Date, steps: readonly SettleStep[]): Promise<EndedRun[]> {
    return timeOutWaiting(this.settleDeps(steps), now);
  }

  releaseCancelled(run: Run, ending: CancelledEnding, steps: readonly SettleStep[]): Promise<void> {
    return releaseCancelled(this.settleDeps(steps), run, ending);
  }

  releaseAbandoned(liveness: InstanceLiveness, steps: readonly SettleStep[]): Promise<number> {
    return releaseAbandoned({ ...this.settleDeps(steps), liveness });
  }

  async claimable(leaseMarginMs: number, limit: number): Promise<{ id: string; orphaned: boolean }[]> {
    return this.deps.prisma.$queryRawUnsafe<{ id: string; orphaned: boolean }[]>(
      `SELECT id, lease_owner IS NOT NULL AS orphaned FROM run
        WHERE status = 'QUEUED' OR (status = 'RUNNING' AND ${leaseExpiredSql("run", 1)})
        ORDER BY lease_owner IS NOT NULL DESC, created_at LIMIT $2`,
      leaseMarginMs,
      limit,
    );
  }

  async lifetimes(runIds: readonly string[]): Promise<{ id: string; ownerId: string; endedAt: Date | null }[]> {
    const rows = await this.deps.prisma.run.findMany({
      where: { id: { in: [...runIds] } },
      select: { id: true, ownerId: true, status: true, finishedAt: true, createdAt: true },
    });
    const terminal: readonly string[] = TERMINAL_STATUSES;
    // Every transition that ends a run sets finishedAt; a row without one counts from its admission.
    return rows.map((row) => ({ id: row.id, ownerId: row.ownerId, endedAt: terminal.includes(row.status) ? (row.finishedAt ?? row.createdAt) : null }));
  }

  /** Runs ending together read their conversations' next runs in one statement (next-queued.ts). */
  nextQueued(conversationId: string): Promise<string | null> {
    return this.readNextQueued(conversationId);
  }

  requests(runId: string): Promise<RunRequests> {
    return readRunRequests(this.deps.prisma, runId, this.deps.dailyCostLimit ?? null);
  }

  carriedRequests(runId: string): { read: CarriedRead; value: () => RunRequests | undefined } {
    return carriedRunRequests(runId, this.deps.dailyCostLimit ?? null);
  }

  async recordModel(write: Transact, runId: string, label: string): Promise<void> {
    // One statement carrying the fence's check where the write takes them: a transaction would
    // cost the first model request its BEGIN, check and COMMIT as round trips of their own.
    await inOneStatement(
      write,
      async ({ db, holder }) => {
        const updated = await db.$executeRawUnsafe(
          `WITH holder AS (${holder ? holdsRunSql(1) : "SELECT $2::int, $3::text"})
           UPDATE run SET model_label = $5 WHERE id = $4 AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM holder))`,
          holder?.runId ?? null,
          holder?.attempt ?? null,
          holder?.workerId ?? null,
          runId,
          label,
        );
        return updated > 0 ? true : null;
      },
      async (tx) => {
        await tx.run.update({ where: { id: runId }, data: { modelLabel: label } });
        return true;
      },
    );
  }

  /**
   * Delivers the run's pending steering inputs (steering.ts) in the attempt's fenced transaction;
   * returns how many. Called only when `requests` found inputs waiting, so a turn without any costs
   * no fenced write and no read of its own.
   */
  async deliverInputs(
    write: Transact,
    { runId, span, append }: { runId: string; span: SpanRef; append: (write: Transact, texts: string[]) => Promise<DeliveredEntry[]> },
  ): Promise<number> {
    return write(async (tx, after) => {
      const changes = await deliverInputsIn(tx, { runId, span, at: new Date(), append: (texts) => append(within(tx, after), texts) });
      after.push(() => this.deps.trace.announce(changes));
      return changes.length;
    });
  }

  async addTokens(write: Transact, runId: string, usage: { input: number; output: number }): Promise<number> {
    const used = budgetTokens(usage);
    // Saturating: tokens past MAX_TOKEN_COUNT (a server reporting billions) keep the run at it, never fail it.
    const [updated] = await write(
      (tx) =>
        tx.$queryRaw<{ tokensUsed: number; ownerId: string }[]>`
        UPDATE run SET tokens_used = LEAST(tokens_used::bigint + ${used}::int, ${MAX_TOKEN_COUNT}::int) WHERE id = ${runId}
        RETURNING tokens_used AS "tokensUsed", owner_id AS "ownerId"`,
    );
    if (!updated) throw new Error(`run ${runId} does not exist`);
    // Committed: the run lists that show the run hear of its new usage (run_list_change logged it).
    if (used > 0) publishRunListChange(this.deps.events, updated.ownerId);
    return updated.tokensUsed;
  }
}
