// Which page of links a `links` selection reads, said the same way by the `links` field and by
// the `workspace` query: the query reads a workspace whose one `links` selection it can plan
// together with that page (domain/workspace/workspace-read.ts) and leaves the page on the
// workspace object, and the `links` field takes it from there when its own plan names the same
// page — else it reads the page itself, as it always could.
import { type FieldNode, getArgumentValues, type GraphQLResolveInfo, isObjectType, Kind } from "graphql";
import type { LinkPage, PagedLink } from "../../domain/workspace/link-pages.js";
import type { PageWithWorkspace } from "../../domain/workspace/workspace-read.js";
import { exposedColumnsBelow } from "../exposed-columns.js";
import { readableWithLinks } from "../../domain/workspace/link-pages.js";
import { newestFirstPage, type PageArgs } from "../newest-first-page.js";

/** Columns every linked run keeps whatever is selected: the owner and what an access token's grants are checked against. */
export const ALWAYS_RUN = ["id", "ownerId", "workspaceId", "conversationId"] as const;

/** A page of links as the `links` field reads it, and the text that names it among a request's loads. */
export type PlannedPage = PageWithWorkspace & { key: string };

/** The page `args` asks for, with the run columns `info`'s selection (a `links` field) shows when the page can read them. */
export function plannedPage(args: PageArgs, info: Pick<GraphQLResolveInfo, "fieldNodes" | "fragments" | "schema">): PlannedPage {
  const page: LinkPage = newestFirstPage(args);
  const shown = exposedColumnsBelow(info as GraphQLResolveInfo, ["edges", "node", "target"], "Run", ALWAYS_RUN);
  const runFields = shown && readableWithLinks(Object.keys(shown.select)) ? Object.keys(shown.select) : null;
  return { page, runFields, key: JSON.stringify([page.take, page.oldestFirst, page.after, page.before, runFields]) };
}

/** Pages read with their workspace, by the workspace object the `links` field is resolved on. */
const readWithWorkspace = new WeakMap<object, { key: string; links: PagedLink[] }>();

export function keepPage(workspace: object, key: string, links: PagedLink[]): void {
  readWithWorkspace.set(workspace, { key, links });
}

/** The page read with this workspace, if it is the page named `key`. */
export function pageReadWith(workspace: object, key: string): PagedLink[] | undefined {
  const kept = readWithWorkspace.get(workspace);
  return kept?.key === key ? kept.links : undefined;
}

/**
 * The page a `workspace` field's selection (`info`) reads through its `links`, when it selects
 * `links` exactly once, plainly (no directive, no alias twice), with arguments that make a page;
 * null otherwise (the `links` field then reads its page on its own).
 */
export function pageBelowWorkspace(info: GraphQLResolveInfo): PlannedPage | null {
  if (info.fieldNodes.length !== 1) return null;
  const found: FieldNode[] = [];
  for (const selection of info.fieldNodes[0]!.selectionSet?.selections ?? []) {
    if (selection.directives?.length) return null;
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value === "links") found.push(selection);
    } else {
      // A fragment may select links too: not planned here.
      return null;
    }
  }
  if (found.length !== 1) return null;
  const workspaceType = info.schema.getType("Workspace");
  const field = isObjectType(workspaceType) ? workspaceType.getFields().links : undefined;
  if (!field) return null;
  try {
    const args = getArgumentValues(field, found[0]!, info.variableValues) as PageArgs;
    return plannedPage(args, { fieldNodes: found, fragments: info.fragments, schema: info.schema });
  } catch {
    // A cursor that is not one of this list's: the `links` field says so itself.
    return null;
  }
}
