// Workspaces and their goal versions (W1, W2, W14). A goal is a chain of immutable versions;
// the workspace row keeps the current version number as the compare-and-swap guard.
import { z } from "zod";
import type { EventPublisher, WorkspaceEventKind } from "../../events/topics.js";
import type { GoalVersion, PrismaClient, Workspace } from "../../generated/prisma/client.js";
import { NotFoundError, StaleVersionError } from "../errors.js";
import { parseInput } from "../validation.js";

export const GOAL_STATEMENT_MAX = 20_000;
export const TITLE_MAX = 200;

const nonBlank = (max: number) =>
  z
    .string()
    .trim()
    .min(1, "must not be empty")
    .refine((value) => [...value].length <= max, `must be at most ${max.toLocaleString("en")} characters`);

const createInput = z.object({ title: nonBlank(TITLE_MAX), goal: nonBlank(GOAL_STATEMENT_MAX) });
const updateGoalInput = z.object({
  workspaceId: z.string(),
  statement: nonBlank(GOAL_STATEMENT_MAX),
  expectedVersion: z.number().int().min(1, "versions start at 1"),
});

export type CreateWorkspaceInput = z.input<typeof createInput>;
export type UpdateGoalInput = z.input<typeof updateGoalInput>;

export class WorkspaceService {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher }) {}

  async createWorkspace(input: CreateWorkspaceInput): Promise<Workspace> {
    const { title, goal } = parseInput(createInput, input);
    return this.deps.prisma.workspace.create({
      data: { title, goalVersion: 1, goalVersions: { create: { version: 1, statement: goal } } },
    });
  }

  /** Creates goal version n+1, only if `expectedVersion` is still the current version n. */
  async updateGoal(input: UpdateGoalInput): Promise<{ workspace: Workspace; goal: GoalVersion }> {
    const { workspaceId, statement, expectedVersion } = parseInput(updateGoalInput, input);
    const result = await this.deps.prisma.$transaction(async (tx) => {
      const swapped = await tx.workspace.updateMany({
        where: { id: workspaceId, goalVersion: expectedVersion },
        data: { goalVersion: { increment: 1 } },
      });
      if (swapped.count === 0) {
        const current = await tx.workspace.findUnique({ where: { id: workspaceId }, select: { goalVersion: true } });
        if (!current) throw new NotFoundError("Workspace", workspaceId);
        throw new StaleVersionError(expectedVersion, current.goalVersion);
      }
      const goal = await tx.goalVersion.create({ data: { workspaceId, version: expectedVersion + 1, statement } });
      const workspace = await tx.workspace.findUniqueOrThrow({ where: { id: workspaceId } });
      return { workspace, goal };
    });
    await this.publish("GOAL_UPDATED", workspaceId, result.goal.version);
    return result;
  }

  /** Stops new links and admissions (enforced by those modules); cancels nothing. Idempotent. */
  archiveWorkspace(workspaceId: string): Promise<Workspace> {
    return this.setStatus(workspaceId, "ARCHIVED");
  }

  /** Undoes an archive. Idempotent. */
  restoreWorkspace(workspaceId: string): Promise<Workspace> {
    return this.setStatus(workspaceId, "ACTIVE");
  }

  private async setStatus(workspaceId: string, status: "ACTIVE" | "ARCHIVED"): Promise<Workspace> {
    const changed = await this.deps.prisma.workspace.updateMany({
      where: { id: workspaceId, status: status === "ARCHIVED" ? "ACTIVE" : "ARCHIVED" },
      data: { status, archivedAt: status === "ARCHIVED" ? new Date() : null },
    });
    const workspace = await this.deps.prisma.workspace.findUnique({ where: { id: workspaceId } });
    if (!workspace) throw new NotFoundError("Workspace", workspaceId);
    if (changed.count > 0) await this.publish(status === "ARCHIVED" ? "ARCHIVED" : "RESTORED", workspaceId, null);
    return workspace;
  }

  private async publish(kind: WorkspaceEventKind, workspaceId: string, goalVersion: number | null): Promise<void> {
    this.deps.events.publish("workspace:event", workspaceId, {
      kind,
      workspaceId,
      goalVersion,
      at: new Date().toISOString(),
    });
  }
}
