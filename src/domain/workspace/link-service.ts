// A workspace's links to objects other modules own (W3), the links made on behalf of runs
// when they publish (W14, W15), and retention-and-link of HTML artifacts (W16).
import type { EventPublisher } from "../../events/topics.js";
import type { Prisma, PrismaClient, WorkspaceLink } from "../../generated/prisma/client.js";
import type { AfterCommit } from "../after-commit.js";
import { UnsupportedError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { type ArtifactRetention, essenceOf } from "../research/artifact-service.js";
import { assertOwned } from "../research/owned-objects.js";
import type { LinkTarget, RunLinkOutcome, RunLinks } from "../research/run-links.js";
import { findOpenWorkspace, findVisibleWorkspace, publishWorkspaceEvent, visibleWorkspace } from "./workspace-access.js";

export type RetentionOutcome = "RETAINED_AND_LINKED" | "RETAINED_LINK_UNCONFIRMED" | "NOT_RETAINED";

/**
 * Locks an open workspace's row for the rest of the transaction, so an archive or delete
 * cannot slip in between the check and the link. False when it is not open.
 */
export async function lockOpenWorkspace(tx: Prisma.TransactionClient, actor: Actor, workspaceId: string): Promise<boolean> {
  const locked = await tx.workspace.updateMany({
    where: { ...visibleWorkspace(actor, workspaceId), status: "ACTIVE" },
    data: { updatedAt: new Date() },
  });
  return locked.count === 1;
}

/**
 * Holds an open workspace's row in share mode for the rest of the transaction and returns its
 * current goal version (in the same statement); null when it is not open. Any number of
 * admissions hold it at once, and an archive, delete or goal update (which update the row) waits
 * for them, as they wait for it. Only for a transaction that will not update the workspace row
 * itself: two holders that both did would deadlock.
 */
export async function shareOpenWorkspace(
  tx: Prisma.TransactionClient,
  actor: Actor,
  workspaceId: string,
): Promise<{ goal: { id: string; version: number; statement: string } } | null> {
  const [row] = await tx.$queryRawUnsafe<{ id: string; version: number; statement: string }[]>(
    `SELECT g.id, g.version, g.statement FROM workspace w JOIN goal_version g ON g.workspace_id = w.id AND g.version = w.goal_version
     WHERE w.id = $1 AND w.owner_id = $2 AND w.deleted_at IS NULL AND w.status = 'ACTIVE' FOR SHARE OF w`,
    workspaceId,
    actor.principalId,
  );
  return row ? { goal: { id: row.id, version: Number(row.version), statement: row.statement } } : null;
}

export function upsertLink(tx: Prisma.TransactionClient, workspaceId: string, target: LinkTarget): Promise<WorkspaceLink> {
  return tx.workspaceLink.upsert({
    where: { workspaceId_targetKind_targetId: { workspaceId, targetKind: target.kind, targetId: target.targetId } },
    create: { workspaceId, targetKind: target.kind, targetId: target.targetId },
    update: {},
  });
}

export class LinkService implements RunLinks {
  constructor(private readonly deps: { prisma: PrismaClient; events: EventPublisher; artifacts: ArtifactRetention }) {}

  /** Links an object the principal owns. Idempotent: linking twice gives the same link. */
  async link(actor: Actor, workspaceId: string, target: LinkTarget): Promise<WorkspaceLink> {
    const link = await this.deps.prisma.$transaction(async (tx) => {
      await assertOwned(tx, actor, target.kind, target.targetId);
      if (!(await lockOpenWorkspace(tx, actor, workspaceId))) await findOpenWorkspace(tx, actor, workspaceId); // throws
      return upsertLink(tx, workspaceId, target);
    });
    this.published("LINKED", workspaceId, target);
    return link;
  }

  /** Removes a link; the object itself is untouched. True if there was a link. */
  async unlink(actor: Actor, workspaceId: string, target: LinkTarget): Promise<boolean> {
    await findVisibleWorkspace(this.deps.prisma, actor, workspaceId);
    const removed = await this.deps.prisma.workspaceLink.deleteMany({
      where: { workspaceId, targetKind: target.kind, targetId: target.targetId },
    });
    if (removed.count > 0) this.published("UNLINKED", workspaceId, target);
    return removed.count > 0;
  }

  /**
   * Links an object to the workspace a run was admitted in, when the run produces it. An
   * archived or deleted workspace gets no link, and the refusal is recorded; a deleted
   * workspace stays a tombstone, never recreated. Runs in the caller's transaction.
   */
  async linkForRunIn(tx: Prisma.TransactionClient, runId: string, target: LinkTarget, after: AfterCommit): Promise<RunLinkOutcome> {
    const run = await tx.run.findUniqueOrThrow({ where: { id: runId }, select: { ownerId: true, workspaceId: true } });
    if (!run.workspaceId) return "NO_WORKSPACE";
    const workspaceId = run.workspaceId;
    if (await lockOpenWorkspace(tx, { principalId: run.ownerId }, workspaceId)) {
      await upsertLink(tx, workspaceId, target);
      after.push(() => this.published("LINKED", workspaceId, target));
      return "LINKED";
    }
    const workspace = await tx.workspace.findUniqueOrThrow({ where: { id: workspaceId } });
    const reason = workspace.deletedAt ? "WORKSPACE_DELETED" : "WORKSPACE_ARCHIVED";
    await tx.linkRefusal.create({
      data: { workspaceId, targetKind: target.kind, targetId: target.targetId, runId, reason },
    });
    return reason === "WORKSPACE_DELETED" ? "NOT_LINKED_WORKSPACE_DELETED" : "NOT_LINKED_WORKSPACE_ARCHIVED";
  }

  /**
   * Asks the artifact module to retain an HTML artifact, then links it. Retention is the
   * artifact module's decision; the link is the workspace's. Either can fail on its own.
   */
  async retainArtifact(
    actor: Actor,
    workspaceId: string,
    artifactId: string,
  ): Promise<{ outcome: RetentionOutcome; reason: string | null; link: WorkspaceLink | null }> {
    await findOpenWorkspace(this.deps.prisma, actor, workspaceId);
    await assertOwned(this.deps.prisma, actor, "ARTIFACT", artifactId);
    const artifact = await this.deps.prisma.artifact.findUniqueOrThrow({ where: { id: artifactId } });
    if (essenceOf(artifact.mimeType) !== "text/html") {
      throw new UnsupportedError(`Only text/html artifacts can be retained in a workspace, not ${artifact.mimeType}.`);
    }
    const decision = await this.deps.artifacts.retain(actor, artifactId);
    if (!decision.retained) return { outcome: "NOT_RETAINED", reason: decision.reason, link: null };
    const target: LinkTarget = { kind: "ARTIFACT", targetId: artifactId };
    const link = await this.deps.prisma.$transaction(async (tx) =>
      (await lockOpenWorkspace(tx, actor, workspaceId)) ? upsertLink(tx, workspaceId, target) : null,
    );
    if (!link) {
      return { outcome: "RETAINED_LINK_UNCONFIRMED", reason: "the workspace was archived or deleted meanwhile", link: null };
    }
    this.published("LINKED", workspaceId, target);
    return { outcome: "RETAINED_AND_LINKED", reason: null, link };
  }

  private published(kind: "LINKED" | "UNLINKED", workspaceId: string, target: LinkTarget): void {
    publishWorkspaceEvent(this.deps.events, { kind, workspaceId, link: { kind: target.kind, targetId: target.targetId } });
  }
}
