// The history catalog (W6): the earlier materials a workspace can draw on, taken from its links
// — linked publications, the publications of linked runs, and those of runs in linked
// conversations — for one principal, a bounded page at a time. It names versions and never
// carries their bodies, and it says when anything was left out, so "not listed" never reads as
// "does not exist": a page is followed by the next through its cursor.
import { Prisma, type PrismaClient } from "../../generated/prisma/client.js";
import { ValidationError } from "../errors.js";
import type { Actor } from "../principal/principal-service.js";
import { type Eligibility, eligibilityOf } from "../research/eligibility.js";
import { PUBLICATION_SOURCES_MAX } from "../research/publication-service.js";
import { type HumanScores, humanScoresOf } from "../research/score-provenance.js";
import { isStorableText } from "../text/unstorable-text.js";
import { inWorkspaceHistory } from "./history-scope.js";
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
  /** The newest HUMAN scores of this exact version (issue 39), and how many it has in all. */
  humanScores: HumanScores;
};

export type CatalogEntry = {
  /** Names the entry as `after`: the next page starts right after it. */
  cursor: string;
  publicationId: string;
  title: string;
  latestVersion: number;
  /** Newest first, at most CATALOG_VERSIONS_PER_ENTRY. */
  versions: CatalogVersion[];
  versionsComplete: boolean;
  via: CatalogVia[];
};

/**
 * What a page of the catalog left out. Entries that follow the page are listed by the next page
 * (`after` = the page's last cursor); versions cut from an entry can be read by number.
 */
export type CatalogTruncation = "MORE_ENTRIES" | "VERSIONS_CUT" | "MORE_ENTRIES_AND_VERSIONS_CUT";

export type HistoryCatalog = {
  entries: CatalogEntry[];
  /** True when no entry follows this page and every entry on it lists all its versions. */
  complete: boolean;
  truncatedReason: CatalogTruncation | null;
  hasNextPage: boolean;
  /** The cursor of the page's last entry: the next page starts after it. */
  endCursor: string | null;
};

export type CatalogPage = { first?: number | null; after?: string | null };

const CURSOR = /^catalog:(\d{1,15}):(.+)$/;

/** The cursor of an entry: its place in the catalog's order (newest publication first, then id). */
export function catalogCursor(entry: { createdAt: Date; publicationId: string }): string {
  return Buffer.from(`catalog:${entry.createdAt.getTime()}:${entry.publicationId}`).toString("base64url");
}

function decodeCatalogCursor(cursor: string): { createdAt: Date; id: string } {
  const match = CURSOR.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match || !isStorableText(match[2]!)) throw new ValidationError([{ field: "after", message: "is not a cursor of the history catalog" }]);
  return { createdAt: new Date(Number(match[1])), id: match[2]! };
}

/**
 * One page of the catalog, newest publication first: `first` entries (default 50, at most 200)
 * after the entry `after` names. The order is a keyset on (created_at, id), so paging to the end
 * lists every entry exactly once, however many there are.
 */
export async function historyCatalog(prisma: PrismaClient, actor: Actor, workspaceId: string, { first, after }: CatalogPage = {}): Promise<HistoryCatalog> {
  const limit = Math.max(0, Math.min(first ?? CATALOG_DEFAULT_ENTRIES, CATALOG_MAX_ENTRIES));
  const bound = after ? decodeCatalogCursor(after) : null;
  await findVisibleWorkspace(prisma, actor, workspaceId);
  // Every read below is bounded by the page, however many links, versions or sources there are:
  // the links are joined in SQL rather than read, and each publication's newest versions and
  // their sources are read in the publications' statement, each with its own LIMIT (relationJoins).
  const candidates = await prisma.$queryRaw<{ id: string; created_at: Date }[]>`
    SELECT p.id, p.created_at FROM publication p
     WHERE ${inWorkspaceHistory(workspaceId, actor.principalId)}
       ${bound ? Prisma.sql`AND (p.created_at, p.id) < (${bound.createdAt}::timestamptz, ${bound.id})` : Prisma.empty}
     ORDER BY p.created_at DESC, p.id DESC
     LIMIT ${limit + 1}`;
  const moreEntries = candidates.length > limit;
  const listedIds = candidates.slice(0, limit).map((candidate) => candidate.id);
  const createdAtOf = new Map(candidates.map((candidate) => [candidate.id, new Date(candidate.created_at)]));
  const listed = await readListedPublications(prisma, listedIds);
  const linked = await linkedTargets(prisma, workspaceId, listedIds, listed);
  const versions = listed.flatMap((publication) => publication.versions);
  const availability = await eligibilityOf(
    prisma,
    versions.map((version) => version.id),
  );
  const humanScores = await humanScoresOf(
    prisma,
    actor.principalId,
    versions.map((version) => version.id),
  );
  const entries = listed.map((publication) => catalogEntry(publication, { createdAt: createdAtOf.get(publication.id)!, linked, availability, humanScores }));
  const versionsCut = entries.some((entry) => !entry.versionsComplete);
  return {
    entries,
    complete: !moreEntries && !versionsCut,
    truncatedReason: moreEntries ? (versionsCut ? "MORE_ENTRIES_AND_VERSIONS_CUT" : "MORE_ENTRIES") : versionsCut ? "VERSIONS_CUT" : null,
    hasNextPage: moreEntries,
    endCursor: entries.at(-1)?.cursor ?? null,
  };
}

type ListedPublication = Awaited<ReturnType<typeof readListedPublications>>[number];
type LinkedTargets = { publications: Set<string>; runs: Set<string>; conversations: Set<string> };

/** The page's publications in the page's order, each with its newest versions and their sources. */
async function readListedPublications(prisma: PrismaClient, listedIds: string[]) {
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
  return listedIds.flatMap((id) => byId.get(id) ?? []);
}

/** Which of the page's publications, origin runs and their conversations the workspace links. */
async function linkedTargets(prisma: PrismaClient, workspaceId: string, listedIds: string[], listed: ListedPublication[]): Promise<LinkedTargets> {
  const versions = listed.flatMap((publication) => publication.versions);
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
  return { publications: linked("PUBLICATION"), runs: linked("RUN"), conversations: linked("CONVERSATION") };
}

function catalogEntry(
  publication: ListedPublication,
  {
    createdAt,
    linked,
    availability,
    humanScores,
  }: { createdAt: Date; linked: LinkedTargets; availability: Map<string, Eligibility>; humanScores: Map<string, HumanScores> },
): CatalogEntry {
  const own = publication.versions;
  const via: CatalogVia[] = [];
  if (linked.publications.has(publication.id)) via.push("LINKED_PUBLICATION");
  if (own.some((v) => v.originRunId && linked.runs.has(v.originRunId))) via.push("LINKED_RUN");
  if (own.some((v) => v.originRun && linked.conversations.has(v.originRun.conversationId))) via.push("LINKED_CONVERSATION");
  return {
    cursor: catalogCursor({ createdAt, publicationId: publication.id }),
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
      humanScores: humanScores.get(version.id) ?? { shown: [], total: 0 },
    })),
  };
}
