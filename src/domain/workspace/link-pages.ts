// A page of each of several workspaces' links, in one statement (the migration's
// workspace_link_page): an index walk from the cursor on, whatever the table's statistics say.
import type { PrismaClient, WorkspaceLink } from "../../generated/prisma/client.js";
import type { LinkTargetKind } from "../../generated/prisma/enums.js";

type Bound = { createdAt: Date; id: string };

/** Which rows of each workspace: `take` of them, newest first (or oldest first), older than `after` and newer than `before` (Relay's cursors of a newest-first list). */
export type LinkPage = { take: number; oldestFirst: boolean; after: Bound | null; before: Bound | null };

/** The page of each of `workspaceIds`, in the page's order; a workspace without links has none. */
export async function linkPages(prisma: PrismaClient, workspaceIds: readonly string[], page: LinkPage): Promise<Map<string, WorkspaceLink[]>> {
  const { after: olderThan, before: newerThan } = page;
  const rows = await prisma.$queryRaw<(Omit<WorkspaceLink, "targetKind"> & { targetKind: string })[]>`
    SELECT id, workspace_id AS "workspaceId", target_kind::text AS "targetKind", target_id AS "targetId", created_at AS "createdAt"
      FROM "public"."workspace_link_page"(${workspaceIds}::text[], ${page.take}::integer, ${page.oldestFirst}::boolean,
             ${olderThan?.createdAt ?? null}::timestamptz, ${olderThan?.id ?? null}::text, ${newerThan?.createdAt ?? null}::timestamptz, ${newerThan?.id ?? null}::text)`;
  const byWorkspace = new Map<string, WorkspaceLink[]>();
  for (const row of rows) {
    const link = { ...row, targetKind: row.targetKind as LinkTargetKind };
    const listed = byWorkspace.get(row.workspaceId);
    if (listed) listed.push(link);
    else byWorkspace.set(row.workspaceId, [link]);
  }
  const sign = page.oldestFirst ? 1 : -1;
  for (const links of byWorkspace.values()) {
    links.sort((a, b) => sign * (a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)));
  }
  return byWorkspace;
}
