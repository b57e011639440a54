// The history catalog (W6): a bounded list of the earlier materials a workspace can draw on,
// taken from its links — linked publications, the publications of linked runs, and those of
// runs in linked conversations — for one principal. It names versions and never carries their
// bodies, and it says when it is incomplete, so "not listed" never reads as "does not exist".
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { Actor } from "../principal/principal-service.js";
import { type Eligibility, eligibilityOf } from "../research/eligibility.js";
import { PUBLICATION_SOURCES_MAX } from "../research/publication-service.js";
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
  // Every read below is bounded by the page, however many links, versions or sources there are:
  // the links are joined in SQL rather than read, and each publication's newest versions and
  // their sources are read in the publications' statement, each with its own LIMIT (relationJoins).
  const candidates = await prisma.$queryRaw<{ id: string }[]>`
    SELECT p.id FROM publication p
     WHERE p.owner_id = ${actor.principalId}
       AND (EXISTS (SELECT 1 FROM workspace_link l
                     WHERE l.workspace_id = ${workspaceId} AND l.target_kind = 'PUBLICATION' AND l.target_id = p.id)
         OR EXISTS (SELECT 1 FROM publication_version v
                      JOIN workspace_link l ON l.workspace_id = ${workspaceId} AND l.target_kind = 'RUN' AND l.target_id = v.origin_run_id
                     WHERE v.publication_id = p.id)
         OR EXISTS (SELECT 1 FROM publication_version v
                      JOIN run r ON r.id = v.origin_run_id AND r.owner_id = ${actor.principalId}
                      JOIN workspace_link l ON l.workspace_id = ${workspaceId} AND l.target_kind = 'CONVERSATION' AND l.target_id = r.conversation_id
                     WHERE v.publication_id = p.id))
     ORDER BY p.created_at DESC, p.id DESC
     LIMIT ${limit + 1}`;
  const truncated = candidates.length > limit;
  const listedIds = candidates.slice(0, limit).map((candidate) => candidate.id);
  const byId = new Map(
    (listedIds.length === 0
      ? []
      : await prisma.publication.findMany({
          where: { id: { in: listedIds } },
          select: {
            id: true,
            title: true,
            latestVersion: true,
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
                  take: PUBLICATION_SOURCES_MAX,
                  select: { sourceVersion: { select: { id: true, publicationId: true, version: true } } },
                },
              },
            },
          },
        })
    ).map((publication) => [publication.id, publication]),
  );
  const listed = listedIds.flatMap((id) => byId.get(id) ?? []);
  const versions = listed.flatMap((publication) => publication.versions);
  const versionIds = versions.map((version) => version.id);
  const runIds = [...new Set(versions.flatMap((v) => (v.originRunId ? [v.originRunId] : [])))];
  const conversationIds = [...new Set(versions.flatMap((v) => (v.originRun ? [v.originRun.conversationId] : [])))];
  const links =
    listed.length === 0
      ? []
      : await prisma.workspaceLink.findMany({
          where: {
            workspaceId,
            OR: [
              { targetKind: "PUBLICATION", targetId: { in: listedIds } },
              { targetKind: "RUN", targetId: { in: runIds } },
              { targetKind: "CONVERSATION", targetId: { in: conversationIds } },
            ],
          },
          select: { targetKind: true, targetId: true },
          // A workspace links an object at most once: one row at most per id asked about.
          take: listedIds.length + runIds.length + conversationIds.length,
        });
  const linked = (kind: string) => new Set(links.filter((link) => link.targetKind === kind).map((link) => link.targetId));
  const [linkedPublications, linkedRuns, linkedConversations] = [linked("PUBLICATION"), linked("RUN"), linked("CONVERSATION")];
  const availability = await eligibilityOf(prisma, versionIds);
  const entries = listed.map((publication): CatalogEntry => {
    const own = publication.versions;
    const via: CatalogVia[] = [];
    if (linkedPublications.has(publication.id)) via.push("LINKED_PUBLICATION");
    if (own.some((v) => v.originRunId && linkedRuns.has(v.originRunId))) via.push("LINKED_RUN");
    if (own.some((v) => v.originRun && linkedConversations.has(v.originRun.conversationId))) via.push("LINKED_CONVERSATION");
    return {
      publicationId: publication.id,
      title: publication.title,
      latestVersion: publication.latestVersion,
      versionsComplete: own.length >= publication.latestVersion,
      via,
      versions: own.map((version) => ({
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
