// What an access token sees of publications below the root: only those readMaterial and node(id)
// would show it — the publications in the history of a workspace it may READ (material-reach.ts).
// A field that leads from one object to a publication or a version (a version's sources, a run's
// materials, a checkpoint's sources, the version that broke eligibility, a ledger entry's version)
// lists only those within reach, and answers null for one outside it (FORBIDDEN where it may not be
// null). A field that stays within one publication (its versions, a version's publication) shows
// what its parent shows. A whole principal (an API key) sees every one of its own.
// A connection's totalCount and countCapped count only what its edges show, and a run's materials
// are numbered among those shown (0, 1, 2…: no gap tells of one left out). Every field of a request
// decided in one batch: one statement for the publications of versions that came without theirs,
// two for the reach.
import { getNamedType, GraphQLError, type GraphQLObjectType, type GraphQLResolveInfo, isNonNullType, isObjectType } from "graphql";
import { type AccessScope, readableWorkspaceIds } from "../domain/principal/access-scope.js";
import { withinReach } from "../domain/workspace/material-reach.js";
import type { GraphQLContext } from "./context.js";
import { loadBatched } from "./request-batch.js";

/** The types whose rows name a publication, and how to find its id in each. */
export const REACHED_TYPES: ReadonlySet<string> = new Set(["Publication", "PublicationVersion", "RunMaterial"]);

/**
 * Shown whenever their parent is: fields that stay within their parent's publication, and the
 * version readMaterial read (it decided the reach itself).
 */
const SAME_PUBLICATION = new Set(["Publication.latestVersion", "Publication.version", "PublicationVersion.publication", "MaterialRead.publicationVersion"]);

type Reached = { id?: string; publicationId?: string; publicationVersionId?: string };

async function publicationsOfVersions(ctx: GraphQLContext, versionIds: string[]): Promise<Map<string, string>> {
  const rows = await ctx.prisma.publicationVersion.findMany({ where: { id: { in: versionIds } }, select: { id: true, publicationId: true } });
  return new Map(rows.map((row) => [row.id, row.publicationId]));
}

/** The publication a row of `kind` belongs to, read in one batch for the rows of the request that lack it. */
function publicationOf(kind: string, row: Reached, ctx: GraphQLContext): Promise<string | undefined> {
  if (kind === "Publication") return Promise.resolve(row.id);
  if (kind === "PublicationVersion" && row.publicationId) return Promise.resolve(row.publicationId);
  const versionId = kind === "RunMaterial" ? row.publicationVersionId : row.id;
  if (!versionId) return Promise.resolve(undefined);
  return loadBatched(ctx, "publication-of-version", versionId, (ids) => publicationsOfVersions(ctx, ids));
}

/** Whether the token's reach holds the publication; one decision for every publication of the batch. */
async function inReach(scope: AccessScope, publicationId: string | undefined, ctx: GraphQLContext): Promise<boolean> {
  if (publicationId === undefined) return false;
  const reach = { workspaceIds: readableWorkspaceIds(scope) };
  const load = async (ids: string[]) => {
    const within = await withinReach(ctx.prisma, ctx.actor.principalId, reach, ids);
    return new Map(ids.map((id) => [id, within.has(id)]));
  };
  return (await loadBatched(ctx, "publication-reach", publicationId, load)) === true;
}

/** Whether the caller sees the publication below the root: always a whole principal; an access token within its reach (decided in the request's batch). */
export const publicationShown = async (ctx: GraphQLContext, publicationId: string): Promise<boolean> =>
  !ctx.actor.access || inReach(ctx.actor.access, publicationId, ctx);

/** The kind of node a connection type's edges hold, where the token's reach decides them; undefined otherwise. */
function reachedNodeOf(connection: GraphQLObjectType): string | undefined {
  const edges = connection.getFields()["edges"];
  const edge = edges ? getNamedType(edges.type) : undefined;
  const node = edge && isObjectType(edge) ? edge.getFields()["node"] : undefined;
  const kind = node ? getNamedType(node.type).name : undefined;
  return kind && REACHED_TYPES.has(kind) && connection.name !== "PublicationVersionConnection" ? kind : undefined;
}

/** Whether a count on this connection type counts publications or versions an access token sees within its reach only. */
export const countsReached = (connection: GraphQLObjectType): boolean => reachedNodeOf(connection) !== undefined;

/** How many items of a list, counted by their publication, lie within the token's reach: decided in the request's batch. */
export async function countInReach(byPublication: ReadonlyMap<string, number>, scope: AccessScope, ctx: GraphQLContext): Promise<number> {
  const counts = await Promise.all([...byPublication].map(async ([id, count]) => ((await inReach(scope, id, ctx)) ? count : 0)));
  return counts.reduce((sum, count) => sum + count, 0);
}

/**
 * What the field hands on: rows of a reached type, or the edges of a connection of them (decided
 * on their nodes, so that a page leaves an edge out rather than failing on it); undefined when the
 * field has nothing to decide.
 */
function reachedBy(info: GraphQLResolveInfo): { kind: string; edges: boolean } | undefined {
  if (SAME_PUBLICATION.has(`${info.parentType.name}.${info.fieldName}`)) return undefined;
  // An edge is there only where its node is within reach: its connection's edges decided that.
  if (info.fieldName === "node" && info.parentType.name.endsWith("Edge")) return undefined;
  const named = getNamedType(info.returnType);
  if (REACHED_TYPES.has(named.name)) return { kind: named.name, edges: false };
  const kind = info.fieldName === "edges" ? reachedNodeOf(info.parentType) : undefined;
  return kind ? { kind, edges: true } : undefined;
}

/** Whether `shownInReach` has anything to decide for this field. */
export const leadsToPublication = (info: GraphQLResolveInfo): boolean => reachedBy(info) !== undefined;

/** The field's result with what lies outside the token's reach left out (null, or FORBIDDEN where it may not be null). */
export function shownInReach(result: unknown, scope: AccessScope, info: GraphQLResolveInfo, ctx: GraphQLContext): Promise<unknown> {
  const { kind, edges } = reachedBy(info) ?? { kind: "", edges: false };
  const rowOf = (item: unknown) => (edges ? (item as { node: Reached }).node : (item as Reached));
  const check = async (found: unknown): Promise<unknown> => {
    const items = Array.isArray(found) ? found : found == null ? [] : [found];
    const kept = await Promise.all(items.map(async (item) => inReach(scope, await publicationOf(kind, rowOf(item), ctx), ctx)));
    if (Array.isArray(found)) {
      const shown = found.filter((_row, index) => kept[index]);
      return kind === "RunMaterial" ? renumbered(shown as { position: number }[]) : shown;
    }
    if (found == null || kept[0]) return found;
    if (isNonNullType(info.returnType)) throw new GraphQLError(`An access token cannot read this ${kind}.`, { extensions: { code: "FORBIDDEN" } });
    return null;
  };
  // Prisma's queries are thenables, not Promises.
  return Promise.resolve(result).then(check);
}

/** A run's materials as a token sees them: each one's position counts only the materials shown before it. */
function renumbered(materials: { position: number }[]): { position: number }[] {
  const positions = materials.map((material) => material.position).sort((a, b) => a - b);
  return materials.map((material) => ({ ...material, position: positions.indexOf(material.position) }));
}
