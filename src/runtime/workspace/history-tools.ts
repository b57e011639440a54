// The run's way past the first page of its workspace's history (W6): `list_history` pages the
// history catalog with a cursor, and `search_history` finds materials by words of their title or
// content. Both answer with identities, versions and as-of times (the search with a snippet),
// never bodies, and record what they showed the model as DISCOVERED in the run's ledger, as the
// catalog in the workspace context is. Neither fails the run: a bad cursor or query is something
// the model is told about. A run an access token admitted sees its workspace's history only if
// the token may READ the workspace; otherwise both say so, and nothing of it (unreadable-workspace.ts).
import { z } from "zod";
import { NotFoundError, ValidationError } from "../../domain/errors.js";
import type { MaterialLedger } from "../../domain/research/material-ledger.js";
import { CATALOG_DEFAULT_ENTRIES } from "../../domain/workspace/history-catalog.js";
import { SEARCH_DEFAULT_HITS, SEARCH_MAX_HITS, SEARCH_QUERY_MAX } from "../../domain/workspace/history-search.js";
import type { HistoryService } from "../../domain/workspace/history-service.js";
import { type Tool, ToolError, type ToolRun } from "../ports/tool.js";
import { catalogForRunReach } from "./reach-wording.js";
import { catalogEntryLine, catalogGaps, discoveredInCatalog, discoveredInSearch, searchLines } from "./catalog-text.js";
import { unreadableWorkspace, workspaceUnreadable } from "./unreadable-workspace.js";

/**
 * The largest page a run may ask for: its result is never spilled (the ledger records all of it
 * as shown), so it stays the size of the page the workspace context lists.
 */
export const LIST_HISTORY_MAX = CATALOG_DEFAULT_ENTRIES;

const listArgs = z.object({
  after: z.string().min(1).nullish(),
  first: z.number().int().min(1).max(LIST_HISTORY_MAX).nullish(),
});

const searchArgs = z.object({ query: z.string(), first: z.number().int().nullish() });

function issuesOf(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".") || "arguments"}: ${issue.message}`).join("; ");
}

/** The run's workspace, or the reason the model cannot look at its history: it has none, or may not read it. */
function workspaceOf(run: ToolRun): string {
  if (!run.workspaceId) throw new ToolError("This run has no workspace, so it has no history to list or search.");
  if (workspaceUnreadable(run)) throw new ToolError(unreadableWorkspace("its history cannot be shown"));
  return run.workspaceId;
}

/** What the history tools work through: the workspace's history, and the ledger they record what they showed in. */
export type HistoryToolDeps = { history: Pick<HistoryService, "catalog" | "search" | "withinReach">; ledger: Pick<MaterialLedger, "record"> };

/** Expected failures as something the model can act on; anything else is a bug and propagates. */
function toToolError(error: unknown): never {
  if (error instanceof ValidationError) throw new ToolError(`Invalid arguments: ${error.issues.map((i) => `${i.field} ${i.message}`).join("; ")}.`);
  if (error instanceof NotFoundError) throw new ToolError("The workspace of this run is no longer available, so its history cannot be shown.");
  throw error;
}

export function createListHistoryTool(deps: HistoryToolDeps): Tool {
  return {
    schema: {
      name: "list_history",
      description: `List the earlier materials of this run's workspace (the history catalog), newest publication first, ${CATALOG_DEFAULT_ENTRIES} a page by default: titles, publicationIds, versions and as-of times, no content. Pass the cursor a page ends with as \`after\` for the next page.`,
      parameters: {
        type: "object",
        properties: {
          after: { type: "string", description: "The cursor the previous page named; omit it for the first page." },
          first: { type: "integer", minimum: 1, maximum: LIST_HISTORY_MAX, description: `How many publications (default and most ${LIST_HISTORY_MAX}).` },
        },
      },
    },
    async execute(args, { run, toolCallId, write }) {
      const workspaceId = workspaceOf(run);
      const parsed = listArgs.safeParse(args ?? {});
      if (!parsed.success) throw new ToolError(`Invalid arguments: ${issuesOf(parsed.error)}.`);
      const page = await deps.history.catalog({ principalId: run.ownerId }, workspaceId, parsed.data).catch(toToolError);
      const catalog = await catalogForRunReach(deps.history, run, page);
      await write((tx) => deps.ledger.record(tx, discoveredInCatalog(run.id, catalog, toolCallId)));
      const lines = [`<history-catalog publications="${catalog.entries.length}">`];
      if (catalog.entries.length === 0)
        lines.push(parsed.data.after ? "- (no publications after this cursor)" : "- (no earlier materials are linked to this workspace)");
      lines.push(...catalog.entries.map(catalogEntryLine));
      const gaps = catalogGaps(catalog);
      lines.push(...(gaps.length > 0 ? gaps : ["This is the end of the catalog."]));
      lines.push("No content is included: read a material with read_material(publicationId, version).", "</history-catalog>");
      return lines.join("\n");
    },
  };
}

export function createSearchHistoryTool(deps: HistoryToolDeps): Tool {
  return {
    schema: {
      name: "search_history",
      description: `Search the earlier materials of this run's workspace by words of their title or content (full-text: words match by their stem; "quoted phrases", -excluded words and "or" work). Returns matching versions with their publicationId, version, as-of time and a short snippet, never the whole content; revoked materials are left out. At most ${SEARCH_MAX_HITS} matches (default ${SEARCH_DEFAULT_HITS}).`,
      parameters: {
        type: "object",
        properties: {
          query: { type: "string", maxLength: SEARCH_QUERY_MAX, description: "The words to look for." },
          first: { type: "integer", minimum: 1, maximum: SEARCH_MAX_HITS, description: `How many matches (default ${SEARCH_DEFAULT_HITS}).` },
        },
        required: ["query"],
      },
    },
    async execute(args, { run, toolCallId, write }) {
      const workspaceId = workspaceOf(run);
      const parsed = searchArgs.safeParse(args ?? {});
      if (!parsed.success) throw new ToolError(`Invalid arguments: ${issuesOf(parsed.error)}.`);
      const search = await deps.history.search({ principalId: run.ownerId }, { workspaceId, ...parsed.data }).catch(toToolError);
      await write((tx) => deps.ledger.record(tx, discoveredInSearch(run.id, search, toolCallId)));
      return [
        `<history-search matches="${search.hits.length}">`,
        ...searchLines(search),
        "A snippet is not the material: read a version with read_material(publicationId, version) before relying on it.",
        "</history-search>",
      ].join("\n");
    },
  };
}
