// How the history catalog and history search read to a model: the same line for a publication
// wherever it is listed (the workspace context, list_history), naming exact versions and as-of
// times and never content, and every page saying what it left out and how to get it.
import { encodeGlobalId } from "../../domain/global-id.js";
import type { LedgerEntry } from "../../domain/research/material-ledger.js";
import type { CatalogEntry, HistoryCatalog } from "../../domain/workspace/history-catalog.js";
import type { HistorySearch } from "../../domain/workspace/history-search.js";
import { humanScoresText } from "../../domain/research/score-provenance.js";

const day = (date: Date) => date.toISOString();
const gid = (publicationId: string) => encodeGlobalId("Publication", publicationId);

export function catalogEntryLine(entry: CatalogEntry): string {
  const versions = entry.versions
    .map((v) => {
      const scores = humanScoresText(v.humanScores);
      return `v${v.version} as of ${day(v.asOf)}${v.availability.eligible ? "" : ` (UNAVAILABLE: ${v.availability.reason})`}${scores ? ` [${scores}]` : ""}`;
    })
    .join("; ");
  const older = entry.versionsComplete ? "" : "; older versions not listed (read any of them by its number)";
  return `- "${entry.title}" publicationId=${gid(entry.publicationId)}: ${versions}${older}`;
}

/** What the page left out and how to reach it; empty when the page holds the rest of the catalog. */
export function catalogGaps(catalog: HistoryCatalog): string[] {
  const lines: string[] = [];
  if (catalog.hasNextPage) {
    lines.push(
      `More publications follow: call list_history with after="${catalog.endCursor}" for the next page, or search_history to find one by words of its title or content.`,
    );
  }
  if (catalog.entries.some((entry) => !entry.versionsComplete)) {
    lines.push("Some publications list only their newest versions; read an older one with read_material by its version number.");
  }
  return lines;
}

export function searchLines(search: HistorySearch): string[] {
  if (search.hits.length === 0) return ["- (no eligible material in this workspace's history matches)"];
  const lines = search.hits.map(
    (hit) =>
      `- "${hit.title}" publicationId=${gid(hit.publicationId)} version ${hit.version}, as of ${day(hit.asOf)}${hit.matchedTitle ? " (title matches)" : ""}: ${hit.snippet.replace(/\s+/g, " ")}`,
  );
  if (!search.complete) lines.push("More versions match than are shown: narrow the query, or ask for more with `first`.");
  return lines;
}

/** The ledger's DISCOVERED entries for the versions a catalog page lists to a run. */
export function discoveredInCatalog(runId: string, catalog: HistoryCatalog, toolCallId?: string): LedgerEntry[] {
  return catalog.entries.flatMap((entry) =>
    entry.versions.map((v) => ({
      runId,
      publicationId: v.publicationId,
      version: v.version,
      publicationVersionId: v.id,
      stage: "DISCOVERED" as const,
      toolCallId,
    })),
  );
}

/** The ledger's DISCOVERED entries for the versions a search shows a run. */
export function discoveredInSearch(runId: string, search: HistorySearch, toolCallId: string): LedgerEntry[] {
  return search.hits.map((hit) => ({
    runId,
    publicationId: hit.publicationId,
    version: hit.version,
    publicationVersionId: hit.versionId,
    stage: "DISCOVERED" as const,
    toolCallId,
  }));
}
