// A page of each of several workspaces' links, in one statement (the migration's
// workspace_link_page): an index walk from the cursor on, whatever the table's statistics say.
// A page whose linked runs are shown by a few of their columns reads them in the same statement.
import { Prisma, type PrismaClient, type Run, type WorkspaceLink } from "../../generated/prisma/client.js";
import type { LinkTargetKind } from "../../generated/prisma/enums.js";

type Bound = { createdAt: Date; id: string };

/** Which rows of each workspace: `take` of them, newest first (or oldest first), older than `after` and newer than `before` (Relay's cursors of a newest-first list). */
export type LinkPage = { take: number; oldestFirst: boolean; after: Bound | null; before: Bound | null };

/** The run columns a page can read with its links, each as the statement reads it (plain values: text, integers, times). */
const RUN_COLUMNS: Partial<Record<keyof Run, string>> = {
  id: `r."id"`,
  ownerId: `r."owner_id"`,
  workspaceId: `r."workspace_id"`,
  conversationId: `r."conversation_id"`,
  status: `r."status"::text`,
  question: `r."question"`,
  agent: `r."agent"`,
  priority: `r."priority"`,
  attempt: `r."attempt"`,
  deadlineAt: `r."deadline_at"`,
  createdAt: `r."created_at"`,
};

/** Whether the page can read these run fields with its links (else the runs are read on their own). */
export const readableWithLinks = (fields: readonly string[]) => fields.every((field) => field in RUN_COLUMNS);

/** A link with the run it names when the page read it too: null when that run is not the owner's (or gone). */
export type PagedLink = WorkspaceLink & { run?: Partial<Run> | null };

/**
 * The page of each of `workspaceIds`, in the page's order; a workspace without links has none.
 * With `runs`, each link to a run carries that run's `fields` when `ownerId` owns it.
 */
export async function linkPages(
  prisma: PrismaClient,
  workspaceIds: readonly string[],
  page: LinkPage,
  runs?: { ownerId: string; fields: readonly string[] },
): Promise<Map<string, PagedLink[]>> {
  const { after: olderThan, before: newerThan } = page;
  const fields = runs?.fields ?? [];
  const runColumns = runColumnList(fields);
  const rows = await prisma.$queryRaw<LinkRow[]>`
    SELECT l.id, l.workspace_id AS "workspaceId", l.target_kind::text AS "targetKind", l.target_id AS "targetId", l.created_at AS "createdAt"${Prisma.raw(runColumns)}
      FROM "public"."workspace_link_page"(${workspaceIds}::text[], ${page.take}::integer, ${page.oldestFirst}::boolean,
             ${olderThan?.createdAt ?? null}::timestamptz, ${olderThan?.id ?? null}::text, ${newerThan?.createdAt ?? null}::timestamptz, ${newerThan?.id ?? null}::text) AS l
      ${runs ? linkedRun(runs.ownerId) : Prisma.empty}`;
  const byWorkspace = new Map<string, PagedLink[]>();
  for (const row of rows) {
    const link = pagedLink(row, runs ? fields : null);
    const listed = byWorkspace.get(row.workspaceId);
    if (listed) listed.push(link);
    else byWorkspace.set(row.workspaceId, [link]);
  }
  for (const links of byWorkspace.values()) sortPage(links, page);
  return byWorkspace;
}

/**
 * The run a page's link `l` names, as `r`, when `ownerId` owns it: looked up by its key, link by
 * link, at any number of runs. A plain join would let the planner read every run of the owner and
 * hash them when it expects many links (PostgreSQL assumes 1,000 rows of a function returning a
 * set): the LIMIT keeps the lookup a subquery of its own, run once for each link.
 */
export function linkedRun(ownerId: string): Prisma.Sql {
  return Prisma.sql`LEFT JOIN LATERAL (SELECT * FROM "public"."run" AS r WHERE l.target_kind = 'RUN' AND r."id" = l.target_id AND r."owner_id" = ${ownerId} LIMIT 1) AS r ON true`;
}

/** The `, <expression> AS "run.<field>"` list that reads these run fields (those the page can read) from `r`. */
export function runColumnList(fields: readonly string[]): string {
  // Column expressions come from RUN_COLUMNS only, never from a request.
  return fields
    .filter((field) => field in RUN_COLUMNS)
    .map((field) => `, ${RUN_COLUMNS[field as keyof Run]} AS "run.${field}"`)
    .join("");
}

type LinkRow = { id: string; workspaceId: string; targetKind: string; targetId: string; createdAt: Date } & Record<string, unknown>;

/** A row of a page's statement as a link; with `fields`, a link to a run carries those of its run's (null: not the owner's). */
export function pagedLink(row: LinkRow, fields: readonly string[] | null): PagedLink {
  const link: PagedLink = {
    id: row.id,
    workspaceId: row.workspaceId,
    targetKind: row.targetKind as LinkTargetKind,
    targetId: row.targetId,
    createdAt: row.createdAt,
  };
  if (fields && link.targetKind === "RUN") {
    link.run = row["run.id"] == null ? null : Object.fromEntries(fields.filter((field) => field in RUN_COLUMNS).map((field) => [field, row[`run.${field}`]]));
  }
  return link;
}

/** Puts a page's links in the page's order (newest first, or oldest first for a `last` page). */
export function sortPage(links: PagedLink[], page: LinkPage): void {
  const sign = page.oldestFirst ? 1 : -1;
  links.sort((a, b) => sign * (a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)));
}
