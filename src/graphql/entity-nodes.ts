// Nodes whose global id names a stored row while the GraphQL type it reads as depends on the
// row's state: a checkpoint revision is a `Checkpoint` while everything it rests on is eligible
// and an `UnavailableCheckpoint` after (W13). Its id must not change with that, so it names the
// row ("CheckpointVersion:<id>"), and node(id) loads it here; the object's own isTypeOf picks
// the type.
import type { GraphQLContext } from "./context.js";

type Load = (id: string, ctx: GraphQLContext) => Promise<object | null>;

const loaders = new Map<string, Load>();

/** Registers how node(id) loads ids of `typename` (a row name, not a GraphQL object type). */
export function defineEntityNode(typename: string, load: Load): void {
  if (loaders.has(typename)) throw new Error(`${typename} ids are already loaded elsewhere.`);
  loaders.set(typename, load);
}

export function entityNodeLoader(typename: string): Load | undefined {
  return loaders.get(typename);
}
