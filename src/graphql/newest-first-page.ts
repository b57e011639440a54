// A Relay page of a relation read newest first, inside the parent's own SQL statement.
//
// Pothos' related connections page with Prisma's `cursor`, which Prisma cannot put in a joined
// statement: a page after a cursor becomes a second statement that reads every row of the
// relation and pages in memory. Here the cursor carries the row's (createdAt, id) and the page is
// a keyset condition with a LIMIT, so Prisma reads it in a lateral join of the parent's statement
// (relationJoins) and any page costs the same at any size.
import { GraphQLError } from "graphql";
import { beyond } from "./list-connection.js";

export type NewestFirstRow = { id: string; createdAt: Date };

/** The Relay arguments of a connection field. */
export type PageArgs = { first?: number | null; after?: string | null; last?: number | null; before?: string | null };

type Bound = { createdAt: Date; id: string };

const CURSOR_PREFIX = "newest:";
const NEWEST_FIRST = [
  ["createdAt", "desc"],
  ["id", "desc"],
] as const;
const OLDEST_FIRST = [
  ["createdAt", "asc"],
  ["id", "asc"],
] as const;

function encodeCursor(row: NewestFirstRow): string {
  return Buffer.from(`${CURSOR_PREFIX}${row.createdAt.getTime()}:${row.id}`).toString("base64url");
}

function decodeCursor(argument: "after" | "before", cursor: string): Bound {
  const match = /^newest:(\d{1,15}):(.+)$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match) throw new GraphQLError(`${argument} is not a cursor of this list`, { extensions: { code: "BAD_USER_INPUT", argument } });
  return { createdAt: new Date(Number(match[1])), id: match[2]! };
}

/**
 * The relation query for one page: `where`, `orderBy` and `take` (one more row than the page, to
 * know whether there is another). Spread it into `nestedSelection(…)` with the relation's own filter.
 */
export function newestFirstQuery(args: PageArgs, { defaultSize = 20, maxSize = 100 } = {}) {
  const backwards = args.last != null && args.first == null;
  const size = Math.max(0, Math.min(backwards ? args.last! : (args.first ?? defaultSize), maxSize));
  const conditions = [
    ...(args.after ? [beyond(NEWEST_FIRST, decodeCursor("after", args.after))] : []),
    ...(args.before ? [beyond(OLDEST_FIRST, decodeCursor("before", args.before))] : []),
  ];
  return {
    where: conditions.length ? { AND: conditions } : undefined,
    orderBy: (backwards ? OLDEST_FIRST : NEWEST_FIRST).map(([column, direction]) => ({ [column]: direction })),
    take: size + 1,
  };
}

/** The connection for rows read with `newestFirstQuery(args)`. */
export function newestFirstConnection<T extends NewestFirstRow>(rows: T[], args: PageArgs, options: { defaultSize?: number; maxSize?: number } = {}) {
  const { take } = newestFirstQuery(args, options);
  const backwards = args.last != null && args.first == null;
  const more = rows.length >= take;
  const page = rows.slice(0, take - 1);
  if (backwards) page.reverse();
  const edges = page.map((node) => ({ cursor: encodeCursor(node), node }));
  return {
    edges,
    pageInfo: {
      hasNextPage: backwards ? args.before != null : more,
      hasPreviousPage: backwards ? more : args.after != null,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}
