// A Relay page of a relation read newest first: the cursor carries the row's (createdAt, id), and
// the page is read from the cursor on with a LIMIT, so any page costs the same at any size.
import { GraphQLError } from "graphql";

export type NewestFirstRow = { id: string; createdAt: Date };

/** The Relay arguments of a connection field. */
export type PageArgs = { first?: number | null; after?: string | null; last?: number | null; before?: string | null };

export type Bound = { createdAt: Date; id: string };

const CURSOR_PREFIX = "newest:";

function encodeCursor(row: NewestFirstRow): string {
  return Buffer.from(`${CURSOR_PREFIX}${row.createdAt.getTime()}:${row.id}`).toString("base64url");
}

function decodeCursor(argument: "after" | "before", cursor: string): Bound {
  const match = /^newest:(\d{1,15}):(.+)$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match) throw new GraphQLError(`${argument} is not a cursor of this list`, { extensions: { code: "BAD_USER_INPUT", argument } });
  return { createdAt: new Date(Number(match[1])), id: match[2]! };
}

/** One page of a newest-first list: how many rows to read (one more than the page, to know whether there is another), in which order, between which bounds. */
export type NewestFirstPage = { take: number; oldestFirst: boolean; after: Bound | null; before: Bound | null };

export function newestFirstPage(args: PageArgs, { defaultSize = 20, maxSize = 100 } = {}): NewestFirstPage {
  const oldestFirst = args.last != null && args.first == null;
  const size = Math.max(0, Math.min(oldestFirst ? args.last! : (args.first ?? defaultSize), maxSize));
  return {
    take: size + 1,
    oldestFirst,
    after: args.after ? decodeCursor("after", args.after) : null,
    before: args.before ? decodeCursor("before", args.before) : null,
  };
}

/** The connection for rows read with `newestFirstPage(args)`, in its order. */
export function newestFirstConnection<T extends NewestFirstRow>(rows: T[], args: PageArgs, options: { defaultSize?: number; maxSize?: number } = {}) {
  const { take } = newestFirstPage(args, options);
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
