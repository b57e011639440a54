// What node(id) shows an access token beyond workspaces, conversations and runs: the things a UI
// shows of a workspace it may READ — the workspace's goal versions, checkpoint revisions and
// links; the publications (with their versions) of its history (those its history catalog lists:
// linked, or published by a linked run or by a run of a linked conversation) and the artifacts
// linked to it; the traces, spans, span events, material uses and messages of runs it may read (a
// message also of a conversation it was granted). Everything else of the principal stays null.
// Each check reads one row of the principal's own, so an id of another principal's is refused
// here as well as by its loader.
import { Prisma, type PrismaClient } from "../generated/prisma/client.js";
import { type AccessScope, grants, readableWorkspaceIds } from "../domain/principal/access-scope.js";
import { inWorkspaceHistory } from "../domain/workspace/history-scope.js";

type RunPlacement = { id: string; workspaceId: string | null; conversationId: string } | null | undefined;
const RUN = { select: { id: true, workspaceId: true, conversationId: true } } as const;

/** Whether READ on this scope covers the node of `typename` and row id `id`, owned by `ownerId`. */
export async function readableThroughGrants(scope: AccessScope, typename: string, id: string, prisma: PrismaClient, ownerId: string): Promise<boolean> {
  const workspaces = readableWorkspaceIds(scope);
  const inWorkspace = (row: { workspaceId: string } | null) => row !== null && workspaces.includes(row.workspaceId);
  const ofRun = (run: RunPlacement) => run != null && grants(scope, "READ", "Run", run.id, run);
  const live = async () =>
    (await prisma.workspace.findMany({ where: { id: { in: workspaces }, ownerId, deletedAt: null }, select: { id: true } })).map((w) => w.id);
  const inHistory = async (publicationId: string | undefined) => {
    const reached = publicationId === undefined ? [] : await live();
    if (reached.length === 0) return false;
    const anyOf = Prisma.join(
      reached.map((workspaceId) => Prisma.sql`(${inWorkspaceHistory(workspaceId, ownerId)})`),
      " OR ",
    );
    return (await prisma.$queryRaw<unknown[]>`SELECT 1 FROM publication p WHERE p.id = ${publicationId} AND (${anyOf})`).length > 0;
  };
  const ownWorkspace = { workspace: { ownerId } };
  switch (typename) {
    case "GoalVersion":
      return inWorkspace(await prisma.goalVersion.findFirst({ where: { id, ...ownWorkspace }, select: { workspaceId: true } }));
    case "CheckpointVersion":
      return inWorkspace(await prisma.checkpointVersion.findFirst({ where: { id, ...ownWorkspace }, select: { workspaceId: true } }));
    case "WorkspaceLink":
      return inWorkspace(await prisma.workspaceLink.findFirst({ where: { id, ...ownWorkspace }, select: { workspaceId: true } }));
    case "Publication":
      return inHistory(id);
    case "PublicationVersion": {
      const version = await prisma.publicationVersion.findFirst({ where: { id, publication: { ownerId } }, select: { publicationId: true } });
      return inHistory(version?.publicationId);
    }
    case "Artifact":
      return (
        (await prisma.workspaceLink.count({
          where: { targetKind: "ARTIFACT", targetId: id, workspaceId: { in: workspaces }, workspace: { ownerId, deletedAt: null } },
        })) > 0
      );
    case "Trace":
      return ofRun((await prisma.trace.findFirst({ where: { id, run: { ownerId } }, select: { run: RUN } }))?.run);
    case "Span":
      return ofRun((await prisma.span.findFirst({ where: { id, trace: { run: { ownerId } } }, select: { trace: { select: { run: RUN } } } }))?.trace.run);
    case "SpanEvent": {
      const event = await prisma.spanEvent.findFirst({
        where: { id, span: { trace: { run: { ownerId } } } },
        select: { span: { select: { trace: { select: { run: RUN } } } } },
      });
      return ofRun(event?.span.trace.run);
    }
    case "MaterialUse":
      return ofRun((await prisma.materialUse.findFirst({ where: { id, run: { ownerId } }, select: { run: RUN } }))?.run);
    case "Message": {
      const message = await prisma.message.findFirst({ where: { id, conversation: { ownerId } }, select: { conversationId: true, run: RUN } });
      return message !== null && (grants(scope, "READ", "Conversation", message.conversationId) || ofRun(message.run));
    }
    default:
      return false;
  }
}
