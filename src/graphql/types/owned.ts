// Scoping shared by every type a principal owns: node(id) and root lists see only its objects.
import type { GraphQLContext } from "../context.js";

/** For prismaNode's findUnique: the object with that id, if the caller owns it. */
export const ownedBy = (id: string, ctx: GraphQLContext) => ({ id, ownerId: ctx.actor.principalId });

/** Newest first, with a stable tiebreak for cursors. */
export const newestFirst = [{ createdAt: "desc" as const }, { id: "desc" as const }];
