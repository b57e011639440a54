// The history of a workspace as one principal may see it (W6): the catalog, a page at a time,
// and the full-text search over it. A service over history-catalog.ts and history-search.ts, so
// those who page or search (the runtime's history tools and workspace context) are given it
// rather than the database.
import type { PrismaClient } from "../../generated/prisma/client.js";
import type { Actor } from "../principal/principal-service.js";
import { type CatalogPage, type HistoryCatalog, historyCatalog } from "./history-catalog.js";
import { type HistorySearch, type SearchHistoryInput, searchHistory } from "./history-search.js";
import { type MaterialReach, withinReach } from "./material-reach.js";

export class HistoryService {
  constructor(private readonly deps: { prisma: PrismaClient }) {}

  /** One page of the workspace's history catalog; see historyCatalog. */
  catalog(actor: Actor, workspaceId: string, page: CatalogPage = {}): Promise<HistoryCatalog> {
    return historyCatalog(this.deps.prisma, actor, workspaceId, page);
  }

  /** The versions in the workspace's history that match a query; see searchHistory. */
  search(actor: Actor, input: SearchHistoryInput): Promise<HistorySearch> {
    return searchHistory(this.deps.prisma, actor, input);
  }

  /** The ids among `publicationIds` that `reach` holds for the principal; see withinReach. */
  withinReach(ownerId: string, reach: MaterialReach, publicationIds: readonly string[]): Promise<Set<string>> {
    return withinReach(this.deps.prisma, ownerId, reach, publicationIds);
  }
}
