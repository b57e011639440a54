// The typical workspace read in one statement: the workspace (if the owner may see it), its
// current goal and, when asked for, a page of its links with the runs they name. Each part is the
// statement the read would otherwise send on its own — the workspace and its newest goal version
// (versions are only ever added, so the newest is current), the page through workspace_link_page
// (an index walk from the cursor on, see link-pages.ts) joined to the owner's runs — so the answers
// are the same, from one snapshot and one round trip. The workspace and goal columns are sent on
// the first row only; the page's rows follow.
import { Prisma, type GoalVersion, type PrismaClient, type Workspace } from "../../generated/prisma/client.js";
import type { WorkspaceStatus } from "../../generated/prisma/enums.js";
import { queryRows } from "../../db/direct-statements.js";
import { type LinkPage, linkedRun, type PagedLink, pagedLink, runColumnList, sortPage } from "./link-pages.js";

/** The page to read with the workspace: which links, and which columns of the owner's runs they name (null: none). */
export type PageWithWorkspace = { page: LinkPage; runFields: readonly string[] | null };

export type WorkspaceWithPage = { workspace: Workspace & { goalVersions?: GoalVersion[] }; links: PagedLink[] | null };

/** Workspace and goal columns as their statement reads them (only on the first row: `first` says which). */
const HEAD = `
  CASE WHEN first THEN w."owner_id" END AS "w.ownerId", CASE WHEN first THEN w."title" END AS "w.title",
  CASE WHEN first THEN w."status"::text END AS "w.status", CASE WHEN first THEN w."goal_version" END AS "w.goalVersion",
  CASE WHEN first THEN w."created_at" END AS "w.createdAt", CASE WHEN first THEN w."updated_at" END AS "w.updatedAt",
  CASE WHEN first THEN w."archived_at" END AS "w.archivedAt", CASE WHEN first THEN w."deleted_at" END AS "w.deletedAt",
  CASE WHEN first THEN w."checkpoint_revision" END AS "w.checkpointRevision", CASE WHEN first THEN w."monthly_budget"::text END AS "w.monthlyBudget",
  CASE WHEN first THEN g."id" END AS "g.id", CASE WHEN first THEN g."version" END AS "g.version",
  CASE WHEN first THEN g."statement" END AS "g.statement", CASE WHEN first THEN g."created_at" END AS "g.createdAt"`;

/**
 * The workspace `id` if `ownerId` owns it and it is not deleted, with its current goal (`withGoal`:
 * as `goalVersions`, the newest only) and, with `withPage`, that page of its links (each link to a run carrying the run's `runFields` when the
 * owner owns the run); null when there is no such workspace.
 */
export async function readWorkspaceWithPage(
  prisma: PrismaClient,
  ownerId: string,
  id: string,
  withGoal: boolean,
  withPage: PageWithWorkspace | null,
): Promise<WorkspaceWithPage | null> {
  const goal = !withGoal
    ? Prisma.sql`CROSS JOIN LATERAL (SELECT NULL::text AS "id", NULL::integer AS "version", NULL::text AS "statement", NULL::timestamptz AS "created_at") AS g`
    : Prisma.sql`LEFT JOIN LATERAL (SELECT * FROM "public"."goal_version" AS v WHERE v."workspace_id" = w."id" ORDER BY v."version" DESC LIMIT 1) AS g ON true`;
  const visible = Prisma.sql`w."id" = ${id} AND w."owner_id" = ${ownerId} AND w."deleted_at" IS NULL`;
  if (!withPage) {
    const rows = await rowsOf(
      prisma,
      Prisma.sql`SELECT w."id" AS "w.id", ${Prisma.raw(HEAD)} FROM (SELECT *, true AS first FROM "public"."workspace" AS w WHERE ${visible}) AS w ${goal}`,
    );
    return rows[0] ? { workspace: workspaceOf(rows[0], withGoal), links: null } : null;
  }
  const { page, runFields } = withPage;
  const { after: olderThan, before: newerThan } = page;
  const rows = await rowsOf(
    prisma,
    Prisma.sql`
    SELECT w."id" AS "w.id", ${Prisma.raw(HEAD)},
           l.id, l.workspace_id AS "workspaceId", l.target_kind::text AS "targetKind", l.target_id AS "targetId", l.created_at AS "createdAt"${Prisma.raw(runColumnList(runFields ?? []))}
      FROM "public"."workspace" AS w
      LEFT JOIN LATERAL "public"."workspace_link_page"(ARRAY[w."id"], ${page.take}::integer, ${page.oldestFirst}::boolean,
             ${olderThan?.createdAt ?? null}::timestamptz, ${olderThan?.id ?? null}::text, ${newerThan?.createdAt ?? null}::timestamptz, ${newerThan?.id ?? null}::text)
             WITH ORDINALITY AS l ON true
      CROSS JOIN LATERAL (SELECT l.ordinality IS NULL OR l.ordinality = 1 AS first) AS f
      ${goal}
      ${runFields ? linkedRun(ownerId) : Prisma.empty}
     WHERE ${visible}`,
  );
  // Rows come in any order (the page is put in its order below): no sort in the statement.
  const head = rows.find((row) => row["w.ownerId"] != null);
  if (!head) return null;
  const links = rows.filter((row) => row.id != null).map((row) => pagedLink(row as Parameters<typeof pagedLink>[0], runFields));
  sortPage(links, page);
  return { workspace: workspaceOf(head, withGoal), links };
}

type Row = Record<string, unknown>;

/** The statement's rows, sent straight to the driver (direct-statements.ts): a read is one statement outside any transaction. */
const rowsOf = (prisma: PrismaClient, statement: Prisma.Sql) => queryRows<Row>(prisma, statement.text, ...statement.values);

/** The workspace row and its goal as Prisma's `findFirst({ include: { goalVersions: { orderBy: { version: "desc" }, take: 1 } } })` gives them. */
function workspaceOf(row: Row, withGoal: boolean): WorkspaceWithPage["workspace"] {
  const id = row["w.id"] as string;
  const budget = row["w.monthlyBudget"] as string | null;
  return {
    id,
    ownerId: row["w.ownerId"] as string,
    title: row["w.title"] as string,
    status: row["w.status"] as WorkspaceStatus,
    goalVersion: row["w.goalVersion"] as number,
    createdAt: row["w.createdAt"] as Date,
    updatedAt: row["w.updatedAt"] as Date,
    archivedAt: row["w.archivedAt"] as Date | null,
    deletedAt: row["w.deletedAt"] as Date | null,
    checkpointRevision: row["w.checkpointRevision"] as number,
    monthlyBudget: budget === null ? null : new Prisma.Decimal(budget),
    ...(withGoal && {
      goalVersions:
        row["g.id"] == null
          ? []
          : [
              {
                id: row["g.id"] as string,
                workspaceId: id,
                version: row["g.version"] as number,
                statement: row["g.statement"] as string,
                createdAt: row["g.createdAt"] as Date,
              },
            ],
    }),
  };
}
