// Trace retention as its users act on it: a workspace's policy (or a principal's default), explicit
// pins, what a reader is told (pins, expiresAt), and the sweep. The rules of which trace expires
// live in expiry.ts; this service authorises and validates.
import { z } from "zod";
import type { PrismaClient, RetentionPolicy } from "../../../generated/prisma/client.js";
import { NotFoundError, TraceExpiredError } from "../../errors.js";
import type { Actor } from "../../principal/principal-service.js";
import { nonBlank, parseInput } from "../../validation.js";
import { KEEP_FOREVER, type OperatorRetention, type RetentionMode } from "./expiry.js";
import { pinsOf, retentionOf, type TracePinView, type TraceRetentionView } from "./pins.js";
import { type SweepReport, type SweepSettings, sweepExpiredTraces } from "./sweep.js";

/** The longest policy: 100 years. */
export const RETENTION_DAYS_MAX = 36_500;
export const PIN_REASON_MAX = 500;

export type SetRetentionPolicyInput = { workspaceId?: string | null; days: number | null; mode?: RetentionMode | null };

const policyInput = z.object({
  workspaceId: z.string().nullish(),
  days: z.number().int("must be a whole number").min(1, "must be at least 1").max(RETENTION_DAYS_MAX, `must be at most ${RETENTION_DAYS_MAX}`).nullable(),
  mode: z.enum(["DELETE", "KEEP_SUMMARY"]).nullish(),
});
const pinInput = z.object({ reason: nonBlank(PIN_REASON_MAX) });

/** How much later than due a trace expires row by row when whole weeks are dropped: one week. */
export const WEEK_GRACE_MS = 7 * 24 * 60 * 60 * 1000;

export class TraceRetention {
  constructor(
    private readonly deps: {
      prisma: PrismaClient;
      /** TRACE_RETENTION_DAYS and TRACE_RETENTION_MODE: kept forever when unset. */
      operator?: OperatorRetention;
      /** The clock expiry is decided by (tests move it). */
      now?: () => Date;
      /** This instance's identity: the sweep lease's holder. */
      instanceId?: string;
      sweep?: Partial<SweepSettings>;
      /**
       * PostgreSQL: expires whole weeks of trace storage (week-expiry.ts) at the start of each
       * sweep. Row by row, traces then expire WEEK_GRACE_MS after they are due, so that the rows of
       * a week go with its partition instead of one by one.
       */
      expireWeeks?: (now: Date, operator: OperatorRetention) => Promise<unknown>;
    },
  ) {}

  get operator(): OperatorRetention {
    return this.deps.operator ?? KEEP_FOREVER;
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /**
   * Sets the policy of a workspace the actor owns, or (no workspaceId) the actor's default for its
   * runs outside a workspace with its own policy. days null keeps traces forever; mode defaults to
   * DELETE. It applies to traces that ended before it too, from the next sweep on.
   */
  async setPolicy(actor: Actor, input: SetRetentionPolicyInput): Promise<RetentionPolicy> {
    const { workspaceId, days, mode } = parseInput(policyInput, input);
    const { prisma } = this.deps;
    if (workspaceId) {
      const workspace = await prisma.workspace.findFirst({ where: { id: workspaceId, ownerId: actor.principalId, deletedAt: null }, select: { id: true } });
      if (!workspace) throw new NotFoundError("Workspace", workspaceId);
    }
    const values = { days, mode: mode ?? "DELETE" } as const;
    // One row per (principal, workspace or none): the unique index treats a missing workspace as a value.
    const [row] = await prisma.$queryRawUnsafe<{ id: string }[]>(
      `INSERT INTO retention_policy (id, principal_id, workspace_id, days, mode, updated_at)
       VALUES (gen_random_uuid()::text, $1, $2, $3, $4::"RetentionMode", now())
       ON CONFLICT (principal_id, workspace_id) DO UPDATE SET days = EXCLUDED.days, mode = EXCLUDED.mode, updated_at = now()
       RETURNING id`,
      actor.principalId,
      workspaceId ?? null,
      values.days,
      values.mode,
    );
    return prisma.retentionPolicy.findUniqueOrThrow({ where: { id: row?.id } });
  }

  /** The actor's policy for the workspace (or its default); null when none is set. */
  policy(actor: Actor, workspaceId: string | null): Promise<RetentionPolicy | null> {
    return this.deps.prisma.retentionPolicy.findFirst({ where: { principalId: actor.principalId, workspaceId } });
  }

  /**
   * Pins the run's trace: it does not expire while pinned (pinning again replaces the reason).
   * A trace that already expired cannot be pinned: TraceExpiredError.
   */
  async pin(actor: Actor, runId: string, input: { reason: string }): Promise<string> {
    const { reason } = parseInput(pinInput, input);
    return this.deps.prisma.$transaction(async (tx) => {
      const traceId = await this.lockLiveTrace(tx, actor, runId);
      await tx.tracePin.upsert({
        where: { traceId },
        create: { traceId, reason, createdBy: actor.principalId, createdAt: this.now() },
        update: { reason },
      });
      return traceId;
    });
  }

  /** Removes the explicit pin: the retention clock restarts now (from the later of the trace's end and now). */
  async unpin(actor: Actor, runId: string): Promise<string> {
    return this.deps.prisma.$transaction(async (tx) => {
      const traceId = await this.lockLiveTrace(tx, actor, runId);
      const removed = await tx.tracePin.deleteMany({ where: { traceId } });
      if (removed.count > 0) await tx.trace.update({ where: { id: traceId }, data: { unpinnedAt: this.now() } });
      return traceId;
    });
  }

  /**
   * The run's trace, locked against the sweep (which skips locked traces): NotFound for a run
   * that is not the actor's or has no trace yet, TraceExpiredError once it expired.
   */
  private async lockLiveTrace(tx: Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0], actor: Actor, runId: string): Promise<string> {
    const [trace] = await tx.$queryRawUnsafe<{ id: string; expiredAt: Date | null; expiredMode: RetentionMode | null }[]>(
      `SELECT t.id, t.expired_at AS "expiredAt", t.expired_mode::text AS "expiredMode"
         FROM trace t JOIN run r ON r.id = t.run_id
        WHERE t.run_id = $1 AND r.owner_id = $2 FOR UPDATE OF t`,
      runId,
      actor.principalId,
    );
    if (!trace) throw new NotFoundError("Run", runId);
    if (trace.expiredAt) throw new TraceExpiredError(runId, trace.expiredAt, trace.expiredMode ?? "DELETE");
    return trace.id;
  }

  pins(traceId: string): Promise<TracePinView[]> {
    return pinsOf(this.deps.prisma, traceId);
  }

  retention(traceId: string): Promise<TraceRetentionView | null> {
    return retentionOf(this.deps.prisma, traceId, this.operator);
  }

  /** One sweep (the worker's companion runs it on an interval); resolves to the traces it expired. */
  async sweep(options: { afterBatch?: () => Promise<void> } = {}): Promise<SweepReport> {
    const now = this.now();
    const { expireWeeks } = this.deps;
    return sweepExpiredTraces(this.deps.prisma, {
      now,
      dueBy: expireWeeks ? new Date(now.getTime() - WEEK_GRACE_MS) : undefined,
      beforeRows: expireWeeks ? () => expireWeeks(now, this.operator) : undefined,
      operator: this.operator,
      holder: this.deps.instanceId ?? `pid:${process.pid}`,
      settings: this.deps.sweep,
      afterBatch: options.afterBatch,
    });
  }
}
