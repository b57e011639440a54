// How every module finds a workspace on behalf of a principal: deleted workspaces and other
// principals' workspaces are indistinguishable from ones that never existed.
import type { EventPublisher, WorkspaceEventMessage } from "../../events/topics.js";
import type { Prisma, Workspace } from "../../generated/prisma/client.js";
import { NotFoundError, WorkspaceArchivedError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";

type Reader = Pick<Prisma.TransactionClient, "workspace">;

export const visibleWorkspace = (actor: Actor, id: string) => ({ id, ownerId: actor.principalId, deletedAt: null });

export async function findVisibleWorkspace(db: Reader, actor: Actor, id: string): Promise<Workspace> {
  const workspace = await db.workspace.findFirst({ where: visibleWorkspace(actor, id) });
  if (!workspace) throw new NotFoundError("Workspace", id);
  return workspace;
}

/** A visible workspace that still takes new links and admissions. */
export async function findOpenWorkspace(db: Reader, actor: Actor, id: string): Promise<Workspace> {
  const workspace = await findVisibleWorkspace(db, actor, id);
  if (workspace.status === "ARCHIVED") throw new WorkspaceArchivedError(id);
  return workspace;
}

export function publishWorkspaceEvent(
  events: EventPublisher,
  event: Omit<WorkspaceEventMessage, "at" | "goalVersion" | "link" | "runId"> & Partial<WorkspaceEventMessage>,
): void {
  events.publish("workspace:event", event.workspaceId, {
    goalVersion: null,
    link: null,
    runId: null,
    at: new Date().toISOString(),
    ...event,
  });
}
