// What node(id) shows an access token beyond workspaces, conversations and runs: the things a UI
// shows of a workspace it may READ — the workspace's goal versions, checkpoint revisions and
// links; the publications (with their versions) of its history (those its history catalog lists:
// linked, or published by a linked run or by a run of a linked conversation) and the artifacts
// linked to it; the traces, spans, span events, material uses, messages and steering inputs of
// runs it may read (a message also of a conversation it may read). Everything else of the
// principal stays null.
// Each check reads one row of the principal's own, so an id of another principal's is refused
// here as well as by its loader.
//
// A workspace's READ and SUBSCRIBE also cover the runs and conversations linked to it (a run
// whose conversation is linked included): linkedThroughGrants asks workspace_link once, on its
// unique (workspace, kind, target) index, for every row in question. Acting on them (ADMIT,
// CANCEL, DECIDE) still needs them in the workspace or granted.
//
// A score is shown where what it judges is (a run, span, publication version or checkpoint
// version); SCORE reaches exactly what READ would, had the SCORE grants been READ grants.
import type { PrismaClient } from "../generated/prisma/client.js";
import { type AccessOperation, type AccessScope, grants, readableWorkspaceIds } from "../domain/principal/access-scope.js";
import { withinReach } from "../domain/workspace/material-reach.js";
import { TARGET_TYPENAMES } from "../domain/research/score-service.js";

type RunPlacement = { id: string; workspaceId: string | null; conversationId: string } | null | undefined;
const RUN = { select: { id: true, workspaceId: true, conversationId: true } } as const;

/** The operations a workspace's link extends to what it links. */
const LINKED_OPERATIONS: readonly AccessOperation[] = ["READ", "SUBSCRIBE"];

/** A run or conversation as a link may name it: a run is also reached through its conversation. */
export type LinkedRow = { kind: "Run" | "Conversation"; id: string; conversationId?: string | null };
type LinkTarget = { targetKind: "RUN" | "CONVERSATION"; targetId: string };

const targetsOf = (row: LinkedRow): LinkTarget[] =>
  row.kind === "Conversation"
    ? [{ targetKind: "CONVERSATION", targetId: row.id }]
    : [{ targetKind: "RUN", targetId: row.id }, ...(row.conversationId ? [{ targetKind: "CONVERSATION" as const, targetId: row.conversationId }] : [])];

/**
 * The ids among `rows` that a live workspace of the principal links, where the scope grants one
 * of `operations` on that workspace. One query on workspace_link's unique index, however many rows.
 */
export async function linkedThroughGrants(
  scope: AccessScope,
  operations: readonly AccessOperation[],
  rows: readonly LinkedRow[],
  prisma: PrismaClient,
  ownerId: string,
): Promise<Set<string>> {
  const through = operations.filter((operation) => LINKED_OPERATIONS.includes(operation));
  const workspaces = scope.grants.filter((g) => g.kind === "Workspace" && g.operations.some((o) => through.includes(o))).map((g) => g.id);
  if (workspaces.length === 0 || rows.length === 0) return new Set();
  const links = await prisma.workspaceLink.findMany({
    where: { workspaceId: { in: workspaces }, OR: rows.flatMap(targetsOf), workspace: { ownerId, deletedAt: null } },
    select: { targetKind: true, targetId: true },
  });
  const linked = new Set(links.map((link) => `${link.targetKind}:${link.targetId}`));
  return new Set(rows.filter((row) => targetsOf(row).some((t) => linked.has(`${t.targetKind}:${t.targetId}`))).map((row) => row.id));
}

/** Whether a workspace granted `operation` links this run (or its conversation) or this conversation. */
export const linkedThroughGrant = async (scope: AccessScope, operation: AccessOperation, row: LinkedRow, prisma: PrismaClient, ownerId: string) =>
  (await linkedThroughGrants(scope, [operation], [row], prisma, ownerId)).has(row.id);

/** Whether READ on this scope covers the node of `typename` and row id `id`, owned by `ownerId`. */
export async function readableThroughGrants(scope: AccessScope, typename: string, id: string, prisma: PrismaClient, ownerId: string): Promise<boolean> {
  const workspaces = readableWorkspaceIds(scope);
  const inWorkspace = (row: { workspaceId: string } | null) => row !== null && workspaces.includes(row.workspaceId);
  const ofRun = async (run: RunPlacement) =>
    run != null && (grants(scope, "READ", "Run", run.id, run) || linkedThroughGrant(scope, "READ", { kind: "Run", ...run }, prisma, ownerId));
  // The rule admission and a token's runs read materials by (material-reach.ts).
  const inHistory = async (publicationId: string | undefined) =>
    publicationId !== undefined && (await withinReach(prisma, ownerId, { workspaceIds: workspaces }, [publicationId])).has(publicationId);
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
    case "RunInput":
      return ofRun((await prisma.runInput.findFirst({ where: { id, run: { ownerId } }, select: { run: RUN } }))?.run);
    case "MaterialUse":
      return ofRun((await prisma.materialUse.findFirst({ where: { id, run: { ownerId } }, select: { run: RUN } }))?.run);
    case "Message": {
      const message = await prisma.message.findFirst({ where: { id, conversation: { ownerId } }, select: { conversationId: true, run: RUN } });
      if (message === null) return false;
      if (grants(scope, "READ", "Conversation", message.conversationId) || (message.run && grants(scope, "READ", "Run", message.run.id, message.run)))
        return true;
      // Linked: its conversation, or its run.
      const row: LinkedRow = message.run
        ? { kind: "Run", id: message.run.id, conversationId: message.conversationId }
        : { kind: "Conversation", id: message.conversationId };
      return linkedThroughGrant(scope, "READ", row, prisma, ownerId);
    }
    // A score is read where what it judges is.
    case "Score": {
      const score = await prisma.score.findFirst({ where: { id, ownerId }, select: { targetKind: true, targetId: true } });
      if (score === null) return false;
      if (score.targetKind !== "RUN") return readableThroughGrants(scope, TARGET_TYPENAMES[score.targetKind], score.targetId, prisma, ownerId);
      return ofRun(await prisma.run.findFirst({ where: { id: score.targetId, ownerId }, ...RUN }));
    }
    default:
      return false;
  }
}

/** A run's place, as grants and links see it. */
export type RunRow = { id: string; workspaceId: string | null; conversationId: string };

/**
 * The ids among `runs` on which the scope grants one of `operations`: directly (the run, its
 * workspace or conversation) or through a workspace granted it that links the run or its
 * conversation. One query for the links of them all, none when every one is granted directly.
 */
export async function runsGranted(
  scope: AccessScope,
  operations: readonly AccessOperation[],
  runs: readonly RunRow[],
  prisma: PrismaClient,
  ownerId: string,
): Promise<Set<string>> {
  const direct = (run: RunRow) => operations.some((operation) => grants(scope, operation, "Run", run.id, run));
  const rest = runs.filter((run) => !direct(run));
  const linked = await linkedThroughGrants(
    scope,
    operations,
    rest.map((run) => ({ kind: "Run" as const, ...run })),
    prisma,
    ownerId,
  );
  return new Set(runs.filter((run) => direct(run) || linked.has(run.id)).map((run) => run.id));
}

/** The ids among `runIds` of the principal's runs that the scope may READ (runsGranted). */
export async function readableRunIds(scope: AccessScope, runIds: readonly string[], prisma: PrismaClient, ownerId: string): Promise<Set<string>> {
  if (runIds.length === 0) return new Set();
  const runs = await prisma.run.findMany({ where: { id: { in: [...runIds] }, ownerId }, ...RUN });
  return runsGranted(scope, ["READ"], runs, prisma, ownerId);
}
