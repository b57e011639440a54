// What a run an access token admitted is told of a version that broke eligibility: no more than
// the token could read. Where the version that broke it lies outside the token's reach, the run is
// told why without its title or why it was revoked (eligibility.ts's unnamed wording), in
// read_material's answer and the ledger, the history catalog and the checkpoint. A run a whole
// principal admitted is told everything, as before.
import type { MaterialRead } from "../../domain/research/publication-service.js";
import type { HistoryCatalog } from "../../domain/workspace/history-catalog.js";
import type { HistoryService } from "../../domain/workspace/history-service.js";
import { reachOfRun } from "../../domain/workspace/material-reach.js";
import type { ToolRun } from "../ports/tool.js";

type Reach = Pick<HistoryService, "withinReach">;
type RunReach = Pick<ToolRun, "ownerId" | "admittedByToken" | "tokenReadableWorkspaceIds">;

/** The publications among `publicationIds` the run may be told of by name: all of them for a run a whole principal admitted. */
async function namedFor(history: Reach, run: RunReach, publicationIds: string[]): Promise<(publicationId: string) => boolean> {
  const reach = reachOfRun(run);
  if (reach === null || publicationIds.length === 0) return () => true;
  const within = await history.withinReach(run.ownerId, reach, publicationIds);
  return (publicationId) => within.has(publicationId);
}

/**
 * An exact-version read as a run an access token admitted is told it, `within` holding the
 * publications of its reach among the read's own and the one that broke it (read_material asks
 * for both at once).
 */
export function readForRunReach(within: ReadonlySet<string>, read: MaterialRead): MaterialRead {
  if (read.status !== "UNAVAILABLE" || !read.unnamed || within.has(read.unnamed.publicationId)) return read;
  return { ...read, reason: read.unnamed.reason };
}

/** A page of the history catalog as the run is told it. */
export async function catalogForRunReach(history: Reach, run: RunReach, catalog: HistoryCatalog): Promise<HistoryCatalog> {
  const culprits = catalog.entries.flatMap((entry) => entry.versions.flatMap((v) => (v.availability.eligible ? [] : [v.availability.culprit.publicationId])));
  const named = await namedFor(history, run, [...new Set(culprits)]);
  return {
    ...catalog,
    entries: catalog.entries.map((entry) => ({
      ...entry,
      versions: entry.versions.map((v) =>
        v.availability.eligible || named(v.availability.culprit.publicationId)
          ? v
          : { ...v, availability: { ...v.availability, reason: v.availability.unnamedReason } },
      ),
    })),
  };
}
