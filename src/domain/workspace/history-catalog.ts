// The history catalog (W6): a bounded list of the earlier materials a workspace can draw on,
// taken from its links — linked publications, the publications of linked runs, and those of
// runs in linked conversations — for one principal. It names versions and never carries their
// bodies, and it says when it is incomplete, so "not listed" never reads as "does not exist".
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { Actor } from "../principal/principal-service.js";
import { type Eligibility, eligibilityOf } from "../research/eligibility.js";
import { findVisibleWorkspace } from "./workspace-access.js";

export const CATALOG_DEFAULT_ENTRIES = 50;
export const CATALOG_MAX_ENTRIES = 200;
/** The newest versions listed per publication; older ones are named as left out. */
export const CATALOG_VERSIONS_PER_ENTRY = 20;

export type CatalogVia = "LINKED_PUBLICATION" | "LINKED_RUN" | "LINKED_CONVERSATION";

export type CatalogVersion = {
  id: string;
  publicationId: string;
  version: number;
  asOf: Date;
  createdAt: Date;
  originRunId: string | null;
  sources: { versionId: string; publicationId: string; version: number }[];
  availability: Eligibility;
};

export type CatalogEntry = {
  publicationId: string;
  title: string;
  latestVersion: number;
  /** Newest first, at most CATALOG_VERSIONS_PER_ENTRY. */
  versions: CatalogVersion[];
  versionsComplete: boolean;
  via: CatalogVia[];
};

export type HistoryCatalog = {
  entries: CatalogEntry[];
  complete: boolean;
  truncatedReason: string | null;
};

export async function historyCatalog(
  prisma: PrismaClient,
  actor: Actor,
  workspaceId: string,
  first: number = CATALOG_DEFAULT_ENTRIES,
): Promise<HistoryCatalog> {
  const limit = Math.max(0, Math.min(first, CATALOG_MAX_ENTRIES));
  await findVisibleWorkspace(prisma, actor, workspaceId);
  const links = await prisma.workspaceLink.findMany({
    where: { workspaceId, targetKind: { in: ["PUBLICATION", "RUN", "CONVERSATION"] } },
    select: { targetKind: true, targetId: true },
  });
  const linked = (kind: string) => links.filter((link) => link.targetKind === kind).map((link) => link.targetId);
  const [publicationIds, runIds, conversationIds] = [linked("PUBLICATION"), linked("RUN"), linked("CONVERSATION")];
  const candidates = {
    ownerId: actor.principalId,
    OR: [
      { id: { in: publicationIds } },
      { versions: { some: { originRunId: { in: runIds } } } },
      { versions: { some: { originRun: { conversationId: { in: conversationIds }, ownerId: actor.principalId } } } },
    ],
  };
  const publications = await prisma.publication.findMany({
    where: candidates,
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit + 1,
    include: {
      versions: {
        orderBy: { version: "desc" },
        take: CATALOG_VERSIONS_PER_ENTRY,
        select: {
          id: true,
          publicationId: true,
          version: true,
          asOf: true,
          createdAt: true,
          originRunId: true,
          originRun: { select: { conversationId: true } },
          sources: {
            orderBy: { position: "asc" },
            select: { sourceVersion: { select: { id: true, publicationId: true, version: true } } },
          },
        },
      },
    },
  });
  const truncated = publications.length > limit;
  const listed = publications.slice(0, limit);
  const availability = await eligibilityOf(
    prisma,
    listed.flatMap((publication) => publication.versions.map((version) => version.id)),
  );
  const linkedRuns = new Set(runIds);
  const linkedConversations = new Set(conversationIds);
  const entries = listed.map((publication): CatalogEntry => {
    const via: CatalogVia[] = [];
    if (publicationIds.includes(publication.id)) via.push("LINKED_PUBLICATION");
    if (publication.versions.some((v) => v.originRunId && linkedRuns.has(v.originRunId))) via.push("LINKED_RUN");
    if (publication.versions.some((v) => v.originRun && linkedConversations.has(v.originRun.conversationId))) {
      via.push("LINKED_CONVERSATION");
    }
    return {
      publicationId: publication.id,
      title: publication.title,
      latestVersion: publication.latestVersion,
      versionsComplete: publication.versions.length >= publication.latestVersion,
      via,
      versions: publication.versions.map((version) => ({
        id: version.id,
        publicationId: version.publicationId,
        version: version.version,
        asOf: version.asOf,
        createdAt: version.createdAt,
        originRunId: version.originRunId,
        sources: version.sources.map(({ sourceVersion }) => ({
          versionId: sourceVersion.id,
          publicationId: sourceVersion.publicationId,
          version: sourceVersion.version,
        })),
        availability: availability.get(version.id) ?? { eligible: true },
      })),
    };
  });
  return {
    entries,
    complete: !truncated,
    truncatedReason: truncated
      ? `the workspace's links lead to more than ${limit} publications; the catalog lists the ${limit} newest (at most ${CATALOG_MAX_ENTRIES} can be asked for)`
      : null,
  };
}
