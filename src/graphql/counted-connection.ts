// Every connection's `totalCount` and `countCapped`. A count is exact up to COUNT_BOUND; past
// it the count stops there and `countCapped` says there are more. It costs nothing unless one of
// the two is selected, and then one statement: COUNT over a subquery with LIMIT COUNT_BOUND + 1
// (Prisma's `count({ take })`), however many rows the list holds. Both fields share that read.
// For an access token, a list of publications or versions counts only those within its reach
// (nested-reach.ts): one statement counting the list's items by publication, then the request's
// decision on those publications.
import type { GraphQLObjectType, GraphQLResolveInfo } from "graphql";
import type { GraphQLContext } from "./context.js";
import { countInReach, countsReached } from "./nested-reach.js";
import { groupedDigits } from "../domain/text/grouped-digits.js";

/** The largest exact count; a list holding more reports it with `countCapped: true`. */
export const COUNT_BOUND = 10_000;

/** The `take` of a bounded count: one past the bound tells "exactly COUNT_BOUND" from "more". */
export const COUNT_TAKE = COUNT_BOUND + 1;

/** Counts a connection's rows, reading at most COUNT_TAKE of them. */
export type CountRows = () => Promise<number>;

/** How many items of a list of publications or versions each publication has (by its id). */
export type CountByPublication = () => Promise<ReadonlyMap<string, number>>;

/**
 * What a connection object carries for its count fields: the rows' counter, or — for a Pothos
 * prismaConnection, which keeps its parent and arguments on the object — the parent to count for;
 * for a list of publications or versions, its count by publication too.
 */
type Countable = { countRows?: CountRows; countByPublication?: CountByPublication; parent?: unknown; args?: unknown };

const counts = new WeakMap<object, Promise<number>>();

type CountFor = (parent: never, ctx: GraphQLContext) => Promise<number>;

function countOf(connection: Countable, ctx: GraphQLContext, info: GraphQLResolveInfo, countFor?: CountFor): Promise<number> {
  let count = counts.get(connection);
  if (!count) counts.set(connection, (count = counterOf(connection, ctx, info.parentType, countFor)()));
  return count;
}

function counterOf(connection: Countable, ctx: GraphQLContext, type: GraphQLObjectType, countFor?: CountFor): CountRows {
  const scope = ctx.actor.access;
  if (scope && countsReached(type)) {
    const byPublication = connection.countByPublication;
    if (!byPublication) throw new Error(`${type.name} carries no count by publication for an access token`);
    return async () => countInReach(await byPublication(), scope, ctx);
  }
  const read = connection.countRows ?? (countFor ? () => countFor(connection.parent as never, ctx) : undefined);
  if (!read) throw new Error("A counted connection carries no counter");
  return read;
}

export const TOTAL_COUNT_DESCRIPTION = `How many items the whole list holds, exactly up to ${groupedDigits(COUNT_BOUND)}; past that it says ${groupedDigits(COUNT_BOUND)} and \`countCapped\` is true. Read only when selected.`;
export const COUNT_CAPPED_DESCRIPTION = `True when the list holds more than ${groupedDigits(COUNT_BOUND)} items, so \`totalCount\` stopped at the bound.`;

// Pothos' prismaConnection skips reading the page when only fields carrying this extension (and
// __typename) are selected: a count alone costs its one statement.
const COUNT_ONLY = { pothosPrismaTotalCount: true };

/** The two fields a connection's type adds (connectionOptions.fields). `countFor` counts a prismaConnection's rows for its parent. */
export function countFields<Parent = never>(countFor?: (parent: Parent, ctx: GraphQLContext) => Promise<number>) {
  // biome-ignore lint/suspicious/noExplicitAny: the builder of whichever connection type the caller defines
  return (t: any) => ({
    totalCount: t.int({
      description: TOTAL_COUNT_DESCRIPTION,
      extensions: COUNT_ONLY,
      resolve: async (connection: Countable, _args: unknown, ctx: GraphQLContext, info: GraphQLResolveInfo) =>
        Math.min(await countOf(connection, ctx, info, countFor as never), COUNT_BOUND),
    }),
    countCapped: t.boolean({
      description: COUNT_CAPPED_DESCRIPTION,
      extensions: COUNT_ONLY,
      resolve: async (connection: Countable, _args: unknown, ctx: GraphQLContext, info: GraphQLResolveInfo) =>
        (await countOf(connection, ctx, info, countFor as never)) > COUNT_BOUND,
    }),
  });
}

/** A Prisma model's bounded count. */
type CountModel = { count(args: never): Promise<number> };

/** The rows of `model` matching `where`, counted up to COUNT_TAKE in one statement. */
export function boundedCount(model: CountModel, where: object): Promise<number> {
  return model.count({ where, take: COUNT_TAKE } as never);
}
