// Which of a principal's publications may be read as materials (W6, W7, A6). A whole principal
// (an API key, a sign-in, the development principal, a schedule) reaches every one of its own; an
// access token only those in the history of a workspace it may READ — what readMaterial and
// node(id) show it (graphql/granted-nodes.ts asks the same question here). A run an access token
// admitted keeps the token's reach (Run.admittedByToken, Run.tokenReadableWorkspaceIds), so the
// run's read_material reads no more than the token could, and its workspace context and history
// tools show its workspace only if the token could READ it (reachesWorkspace).
import { Prisma } from "../../generated/prisma/client.js";
import { readableWorkspaceIds } from "../principal/access-scope.js";
import { endUserOf } from "../principal/end-user.js";
import type { Actor } from "../principal/principal-service.js";
import { inWorkspaceHistory } from "./history-scope.js";

/** null: every publication of the principal; otherwise those in the history of one of these workspaces. */
export type MaterialReach = { workspaceIds: readonly string[] } | null;

type Db = Pick<Prisma.TransactionClient, "workspace" | "$queryRaw">;

/** The actor's reach: an access token's readable workspaces, or the whole principal. */
export const reachOf = (actor: Pick<Actor, "access">): MaterialReach => (actor.access ? { workspaceIds: readableWorkspaceIds(actor.access) } : null);

/**
 * What a run records of its admitting actor's reach (the run's columns), and of the end user a token
 * admits it for (queue-gate.ts): only one its minting backend named (endUser), so the end users'
 * queue rows are the team's end users, not one for every token ever minted.
 */
export const admittedReach = (
  actor: Pick<Actor, "access" | "keyId">,
): { admittedByToken: string | null; tokenReadableWorkspaceIds: string[]; admittedFor: string | null } =>
  actor.access
    ? {
        admittedByToken: actor.access.tokenId,
        tokenReadableWorkspaceIds: readableWorkspaceIds(actor.access),
        admittedFor: actor.access.endUser === undefined ? null : endUserOf(actor.keyId, actor.access),
      }
    : { admittedByToken: null, tokenReadableWorkspaceIds: [], admittedFor: null };

/** The reach a run reads with: the admitting token's, or its whole principal's. */
export const reachOfRun = (run: { admittedByToken: string | null; tokenReadableWorkspaceIds: readonly string[] }): MaterialReach =>
  run.admittedByToken === null ? null : { workspaceIds: run.tokenReadableWorkspaceIds };

/**
 * Whether `reach` holds the workspace itself — its title, goal, checkpoint and history catalog:
 * a whole principal's holds each of its own, an access token's those it may READ. No statement.
 */
export const reachesWorkspace = (reach: MaterialReach, workspaceId: string): boolean => reach === null || reach.workspaceIds.includes(workspaceId);

/**
 * The ids among `publicationIds` within `reach` for the principal `ownerId`: all of them for a
 * whole principal (ownership is the caller's check), otherwise those of the principal's that the
 * history of one of the reach's live workspaces holds. Two statements, however many ids.
 */
export async function withinReach(db: Db, ownerId: string, reach: MaterialReach, publicationIds: readonly string[]): Promise<Set<string>> {
  if (reach === null) return new Set(publicationIds);
  if (publicationIds.length === 0 || reach.workspaceIds.length === 0) return new Set();
  const live = await db.workspace.findMany({ where: { id: { in: [...reach.workspaceIds] }, ownerId, deletedAt: null }, select: { id: true } });
  if (live.length === 0) return new Set();
  const inAny = Prisma.join(
    live.map(({ id }) => Prisma.sql`(${inWorkspaceHistory(id, ownerId)})`),
    " OR ",
  );
  const rows = await db.$queryRaw<{ id: string }[]>`SELECT p.id FROM publication p WHERE p.id IN (${Prisma.join([...new Set(publicationIds)])}) AND (${inAny})`;
  return new Set(rows.map((row) => row.id));
}
