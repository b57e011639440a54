// Workspaces and their goal versions (W1, W2, W14, W15). A goal is a chain of immutable
// versions; the workspace row keeps the current version number as the compare-and-swap guard.
import { z } from "zod";
import type { EventPublisher } from "../../events/topics.js";
import type { GoalVersion, Prisma, PrismaClient, Workspace } from "../../generated/prisma/client.js";
import { StaleVersionError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { nonBlank, parseInput, TITLE_MAX } from "../validation.js";
import { findVisibleWorkspace, publishWorkspaceEvent, visibleWorkspace } from "./workspace-access.js";
import { encodeGlobalId } from "../global-id.js";
import { recordWebhookEvent, type WebhookWake } from "../webhooks/webhook-events.js";
import { type AfterCommit, runAfterCommit } from "../after-commit.js";
import { costLimit } from "../costs/caps.js";

export const GOAL_STATEMENT_MAX = 20_000;

const createInput = z.object({ title: nonBlank(TITLE_MAX), goal: nonBlank(GOAL_STATEMENT_MAX) });
const updateGoalInput = z.object({
  workspaceId: z.string(),
  statement: nonBlank(GOAL_STATEMENT_MAX),
  expectedVersion: z.number().int().min(1, "versions start at 1"),
});

const budgetInput = z.object({ workspaceId: z.string(), monthlyBudget: costLimit.nullish().transform((v) => v ?? null) });

export type CreateWorkspaceInput = z.input<typeof createInput>;
export type UpdateGoalInput = z.input<typeof updateGoalInput>;
export type SetWorkspaceBudgetInput = z.input<typeof budgetInput>;

/**
 * What archiving and restoring a workspace does to its schedules, in the same transaction (the
 * composition root gives the schedules' own, schedules/archived-schedules.ts): an archived
 * workspace's schedules do not fire, and fire again from their next fire after a restore.
 */
export type ArchiveEffects = {
  /** Locks the owner's schedules of the workspace, before the workspace row is written (a fire holds its schedule, then shares the workspace). */
  hold(tx: Prisma.TransactionClient, ownerId: string, workspaceId: string): Promise<void>;
  archived(tx: Prisma.TransactionClient, workspaceId: string): Promise<void>;
  restored(tx: Prisma.TransactionClient, workspaceId: string): Promise<void>;
};

export class WorkspaceService {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher; schedules?: ArchiveEffects }) {}

  async createWorkspace(actor: Actor, input: CreateWorkspaceInput): Promise<Workspace> {
    const { title, goal } = parseInput(createInput, input);
    return this.deps.prisma.workspace.create({
      data: { ownerId: actor.principalId, title, goalVersion: 1, goalVersions: { create: { version: 1, statement: goal } } },
    });
  }

  /** Creates goal version n+1, only if `expectedVersion` is still the current version n. */
  async updateGoal(actor: Actor, input: UpdateGoalInput): Promise<{ workspace: Workspace; goal: GoalVersion }> {
    const { workspaceId, statement, expectedVersion } = parseInput(updateGoalInput, input);
    const result = await this.deps.prisma.$transaction(async (tx) => {
      const swapped = await tx.workspace.updateMany({
        where: { ...visibleWorkspace(actor, workspaceId), goalVersion: expectedVersion },
        data: { goalVersion: { increment: 1 } },
      });
      if (swapped.count === 0) {
        const current = await findVisibleWorkspace(tx, actor, workspaceId);
        throw new StaleVersionError(expectedVersion, current.goalVersion);
      }
      const goal = await tx.goalVersion.create({ data: { workspaceId, version: expectedVersion + 1, statement } });
      const workspace = await tx.workspace.findUniqueOrThrow({ where: { id: workspaceId } });
      return { workspace, goal };
    });
    publishWorkspaceEvent(this.deps.events, { kind: "GOAL_UPDATED", workspaceId, goalVersion: result.goal.version });
    return result;
  }

  /** The workspace if the actor may see it (it exists, is theirs and is not deleted); null otherwise. */
  visible(actor: Actor, workspaceId: string): Promise<Workspace | null> {
    return this.deps.prisma.workspace.findFirst({ where: visibleWorkspace(actor, workspaceId) });
  }

  /**
   * Sets (or, with null, clears) the owner's monthly budget in USD for the workspace's runs: the
   * runs admitted in it this UTC calendar month stop with BUDGET once it would be crossed.
   */
  async setMonthlyBudget(actor: Actor, input: SetWorkspaceBudgetInput): Promise<Workspace> {
    const { workspaceId, monthlyBudget } = parseInput(budgetInput, input);
    const updated = await this.deps.prisma.workspace.updateMany({ where: visibleWorkspace(actor, workspaceId), data: { monthlyBudget } });
    if (updated.count === 0) await findVisibleWorkspace(this.deps.prisma, actor, workspaceId); // throws NotFoundError
    return findVisibleWorkspace(this.deps.prisma, actor, workspaceId);
  }

  /** Stops new links and admissions, and the workspace's schedules' fires; cancels nothing. Idempotent. */
  archiveWorkspace(actor: Actor, workspaceId: string): Promise<Workspace> {
    return this.setStatus(actor, workspaceId, "ARCHIVED");
  }

  /** Undoes an archive: its schedules fire again from their next fire after now. Idempotent. */
  restoreWorkspace(actor: Actor, workspaceId: string): Promise<Workspace> {
    return this.setStatus(actor, workspaceId, "ACTIVE");
  }

  /**
   * Removes the workspace's own organisation — goal versions, checkpoint revisions and links — in
   * one transaction, with its schedules, and leaves a tombstone row, so the workspace reads as not found and nothing
   * can recreate it or link to it (W15). The tombstone keeps the rows' foreign key, so nothing
   * cascades: each kind is deleted here. Conversations, runs, publications and artifacts are
   * other modules' and are not touched, nor are the records runs keep of what they asked of the
   * workspace (checkpoint proposals, link refusals): they are read through the run.
   */
  async deleteWorkspace(actor: Actor, workspaceId: string): Promise<void> {
    const after: AfterCommit = [];
    await this.deps.prisma.$transaction(async (tx) => {
      // Its schedules go first, before any run or the workspace is locked: a fire holds its
      // schedule and then shares the workspace, so the other order could deadlock with it.
      await tx.schedule.deleteMany({ where: { workspaceId, ownerId: actor.principalId, workspace: { deletedAt: null } } });
      await lockRunsOfWorkspace(tx, actor, workspaceId);
      const deleted = await tx.workspace.updateMany({
        where: visibleWorkspace(actor, workspaceId),
        data: { deletedAt: new Date() },
      });
      if (deleted.count === 0) await findVisibleWorkspace(tx, actor, workspaceId); // throws NotFoundError
      await tx.workspaceLink.deleteMany({ where: { workspaceId } });
      await tx.goalVersion.deleteMany({ where: { workspaceId } });
      await tx.checkpointVersion.deleteMany({ where: { workspaceId } });
      if (deleted.count > 0) await recordWorkspaceEvent(tx, actor, workspaceId, "WORKSPACE_DELETED", { events: this.deps.events, after });
    });
    runAfterCommit(after);
    publishWorkspaceEvent(this.deps.events, { kind: "DELETED", workspaceId });
  }

  private async setStatus(actor: Actor, workspaceId: string, status: "ACTIVE" | "ARCHIVED"): Promise<Workspace> {
    const after: AfterCommit = [];
    const changed = await this.deps.prisma.$transaction(async (tx) => {
      await this.deps.schedules?.hold(tx, actor.principalId, workspaceId);
      const updated = await tx.workspace.updateMany({
        where: { ...visibleWorkspace(actor, workspaceId), status: status === "ARCHIVED" ? "ACTIVE" : "ARCHIVED" },
        data: { status, archivedAt: status === "ARCHIVED" ? new Date() : null },
      });
      if (updated.count > 0) await this.deps.schedules?.[status === "ARCHIVED" ? "archived" : "restored"](tx, workspaceId);
      if (updated.count > 0 && status === "ARCHIVED")
        await recordWorkspaceEvent(tx, actor, workspaceId, "WORKSPACE_ARCHIVED", { events: this.deps.events, after });
      return updated;
    });
    runAfterCommit(after);
    const workspace = await findVisibleWorkspace(this.deps.prisma, actor, workspaceId);
    if (changed.count > 0) {
      publishWorkspaceEvent(this.deps.events, { kind: status === "ARCHIVED" ? "ARCHIVED" : "RESTORED", workspaceId });
    }
    return workspace;
  }
}

/**
 * The lock order of a run and its workspace (domain/runs/lock-order.ts): the run rows, in id
 * order, before the workspace row. Deleting the goal versions updates every run admitted with one
 * (ON DELETE SET NULL); a run that settles holds its run row and then links its answer into the
 * workspace. So the runs that may still be written to — not ended, or still leased — are locked
 * here first, as a settling run would, and the workspace only after. (Written out here: this folder
 * cannot import domain/runs, whose admission imports the workspace.)
 */
async function lockRunsOfWorkspace(tx: Prisma.TransactionClient, actor: Actor, workspaceId: string): Promise<void> {
  await tx.$queryRawUnsafe(
    `SELECT r.id FROM run r
      WHERE r.goal_version_id IN (SELECT g.id FROM goal_version g JOIN workspace w ON w.id = g.workspace_id
                                   WHERE g.workspace_id = $1 AND w.owner_id = $2 AND w.deleted_at IS NULL)
        AND (r.status IN ('QUEUED', 'RUNNING', 'WAITING', 'PAUSED') OR r.lease_owner IS NOT NULL)
      ORDER BY r.id FOR NO KEY UPDATE OF r`,
    workspaceId,
    actor.principalId,
  );
}

/** The owner's webhooks hear of an archived or deleted workspace in the same commit. */
function recordWorkspaceEvent(
  tx: Prisma.TransactionClient,
  actor: Actor,
  workspaceId: string,
  type: "WORKSPACE_ARCHIVED" | "WORKSPACE_DELETED",
  wake: WebhookWake,
) {
  const summary = type === "WORKSPACE_ARCHIVED" ? "the workspace was archived" : "the workspace was deleted";
  return recordWebhookEvent(tx, { ownerId: actor.principalId, type, data: { workspaceId: encodeGlobalId("Workspace", workspaceId), summary } }, wake);
}
