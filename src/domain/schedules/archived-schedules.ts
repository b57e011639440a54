// The schedules of an archived workspace do not fire: archiving takes their next fire away
// (next_fire_at NULL), so no scheduler claims them, records anything of them or even reads them
// on its passes; restoring gives each its next fire after the restore, like resumeSchedule — the
// fires that fell while the workspace was archived are not caught up. A triggered fire
// (triggerSchedule) of such a schedule is still recorded SKIPPED, with the reason.
import type { Prisma } from "../../generated/prisma/client.js";
import type { ArchiveEffects } from "../workspace/workspace-service.js";
import { nextFireAfter } from "./fire-times.js";
import { recurrenceOf } from "./schedule-input.js";

type Tx = Prisma.TransactionClient;

/** The reason of a triggered fire of an archived workspace's schedule, recorded SKIPPED. */
export const WORKSPACE_ARCHIVED_FIRE_REASON = "the workspace is archived";

/** What archiving and restoring a workspace does to its schedules, for WorkspaceService. */
export function archivedSchedules({ now = () => new Date() }: { now?: () => Date } = {}): ArchiveEffects {
  return {
    // The lock order of a fire: its schedule, then the workspace (which its admission shares).
    hold: async (tx, ownerId, workspaceId) => {
      await tx.$queryRawUnsafe("SELECT id FROM schedule WHERE workspace_id = $1 AND owner_id = $2 ORDER BY id FOR UPDATE", workspaceId, ownerId);
    },
    archived: async (tx, workspaceId) => {
      await tx.schedule.updateMany({ where: { workspaceId }, data: { nextFireAt: null } });
    },
    restored: async (tx, workspaceId) => {
      const at = now();
      for (const schedule of await tx.schedule.findMany({ where: { workspaceId } })) {
        await tx.schedule.update({ where: { id: schedule.id }, data: { nextFireAt: nextFireAfter(recurrenceOf(schedule), at) } });
      }
    },
  };
}

/** Whether the schedule's workspace is archived (and not deleted): its schedules have no next fire then. */
export async function workspaceArchived(tx: Tx, workspaceId: string): Promise<boolean> {
  const workspace = await tx.workspace.findUnique({ where: { id: workspaceId }, select: { status: true, deletedAt: true } });
  return workspace?.status === "ARCHIVED" && !workspace.deletedAt;
}
