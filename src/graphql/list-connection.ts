// Lists a client pages through are Relay connections (edges { cursor node }, pageInfo, and the
// bounded `totalCount` / `countCapped` of counted-connection.ts), read a page at a time: `first`
// (or `last`) is the LIMIT of the list's own query, plus one row to know whether there is more,
// and `after` (or `before`) a keyset condition on the list's order columns. A page costs the same
// however long the list has grown: no OFFSET, and no row read only to be dropped.
//
// An item's cursor is its global id (the `id` the API shows for it), so the page after a cursor
// first reads that item's order columns, among the items of this parent the caller may see: a
// cursor of another list is an error, never an empty page a client would take for the end. Each
// list is read by its own query, once per parent (but for the first page of a span's events,
// which the spans of a request read together: see types/trace.ts). Connections read in their
// parent's statement carry the order columns in their cursor instead (newest-first-page.ts).
import { getRefFromModel, queryFromInfo } from "@pothos/plugin-prisma";
import { GraphQLError, type GraphQLResolveInfo } from "graphql";
import { builder } from "./builder.js";
import type { GraphQLContext } from "./context.js";
import { boundedCount, type CountByPublication, type CountRows, countFields } from "./counted-connection.js";
import { decodeGlobalId, encodeGlobalId } from "./global-id.js";
import { groupedDigits } from "../domain/text/grouped-digits.js";

type Direction = "asc" | "desc";
type Order = readonly (readonly [column: string, direction: Direction])[];

/** A list's page sizes, and the type of its items: a cursor is one of their ids. */
export type ListPage = { typename: string; defaultSize: number; maxSize: number };

export type KeysetList = ListPage & {
  /** The order, most significant column first; together the columns are unique (the last is the tiebreak). */
  order: Order;
};

/**
 * Page sizes of the lists one run fills by the hundreds — its material ledger (every catalog
 * version listed to it is an entry): an ordinary run's fits one page.
 */
export const LONG_PAGE = { defaultSize: 500, maxSize: 1_000 } as const;
/**
 * Page sizes of a trace's spans and of each span's events: a page of spans with a page of events
 * each stays within the request cost limit (server/page-cost.ts) at the default sizes.
 */
export const TRACE_PAGE = { defaultSize: 100, maxSize: 1_000 } as const;
/** Page sizes of every other growing list: today's lists fit one page in ordinary use. */
export const LIST_PAGE = { defaultSize: 100, maxSize: 500 } as const;

/**
 * The field extension giving a connection's page sizes (PageSizes). The request limits
 * (server/hardening.ts, server/page-cost.ts) count a page by them, and hold `first`/`last` on a
 * list connection (`listMax`) to its largest page instead of to MAX_PAGE_SIZE.
 */
export const PAGE_SIZES = "pageSizes";
export type PageSizes = { defaultSize: number; maxSize: number; listMax?: true };

/** The field extension of a list without pages that holds at most this many items (the request limits count it so). */
export const LIST_ITEMS = "listItems";

/** The field extension of a trace's spans and events: below one trace they number MAX_TRACE_RECORDS at most, whatever the pages. */
export const TRACE_RECORDS = "traceRecords";

/** A prismaConnection's page sizes, with the extension that tells the request limits about them. */
export function paged(sizes: { defaultSize: number; maxSize: number }) {
  return { ...sizes, extensions: { [PAGE_SIZES]: { defaultSize: sizes.defaultSize, maxSize: sizes.maxSize } satisfies PageSizes } };
}

/** A list's description: what it holds and in which order, then how to page through it. */
export function describePage(what: string, list: ListPage | KeysetList): string {
  const order = "order" in list ? list.order : [];
  const ties = order.length > 1 && order.at(-1)![0] === "id" ? " Items that tie in that order come by id." : "";
  return (
    `${what}${ties} A page holds \`first\` items (default ${count(list.defaultSize)}, at most ${count(list.maxSize)}); ` +
    "for the next page pass `pageInfo.endCursor` as `after` (an item's cursor is its id). `last` and `before` page backwards."
  );
}

const count = groupedDigits;

/**
 * A refused `first` or `last`, in the words the request limits (server/hardening.ts) refuse a
 * connection's; they refuse a list's too large page with this error before anything runs.
 */
export function pageSizeError(size: number, maxSize: number, argument = "first"): GraphQLError | null {
  if (size < 1) return new GraphQLError(`${argument}: ${size} asks for no items; ask for 1 to ${maxSize}.`, { extensions: { code: "BAD_USER_INPUT" } });
  if (size > maxSize) {
    return new GraphQLError(`${argument}: ${size} asks for more than ${maxSize} items; page through the list with "after" instead.`, {
      extensions: { code: "PAGE_TOO_LARGE" },
    });
  }
  return null;
}

/** The Relay arguments of a connection field. */
export type PageArgs = { first?: number | null; after?: string | null; last?: number | null; before?: string | null };

/** How many items a page holds and which way it reads: `last` without `first` reads backwards. */
function sizeOf(list: ListPage, args: PageArgs): { take: number; backwards: boolean } {
  const backwards = args.last != null && args.first == null;
  const take = backwards ? args.last! : (args.first ?? list.defaultSize);
  const refused = pageSizeError(take, list.maxSize, backwards ? "last" : "first");
  if (refused) throw refused;
  return { take, backwards };
}

export type Page<Where> = {
  /** The page's size; read `take + 1` rows to know whether there is more. */
  take: number;
  backwards: boolean;
  /** The order to read in (reversed for a backward page). */
  orderBy: Record<string, Direction>[];
  /** The keyset conditions of `after` and `before`; empty for a first page. */
  where: Where;
};

const reversed = (order: Order): Order => order.map(([column, direction]) => [column, direction === "asc" ? "desc" : "asc"] as const);

/**
 * One page of `list`. `findRow` reads the item a cursor names — by its database id, among the
 * items of this parent the caller may see — selecting `select` (its order columns), or null. An
 * id of another type, or of no item of this parent, is an error rather than an empty page.
 */
export async function pageOf<Where>(
  list: KeysetList,
  args: PageArgs,
  findRow: (id: string, select: Record<string, true>) => Promise<Record<string, unknown> | null>,
): Promise<Page<Where>> {
  const { take, backwards } = sizeOf(list, args);
  const select = Object.fromEntries(list.order.map(([column]) => [column, true as const]));
  const boundOf = async (argument: "after" | "before", cursor: string) => {
    const decoded = decodeGlobalId(cursor);
    const row = decoded?.typename === list.typename ? await findRow(decoded.id, select) : null;
    if (!row) throw cursorError(argument, cursor, list.typename);
    return beyond(argument === "after" ? list.order : reversed(list.order), row);
  };
  const conditions = [
    ...(args.after != null ? [await boundOf("after", args.after)] : []),
    ...(args.before != null ? [await boundOf("before", args.before)] : []),
  ];
  const orderBy = (backwards ? reversed(list.order) : list.order).map(([column, direction]) => ({ [column]: direction }));
  return { take, backwards, orderBy, where: (conditions.length ? { AND: conditions } : {}) as Where };
}

/**
 * The rows after `row` in `order`, as a Prisma condition: (a, b) after (x, y) is a beyond x, or
 * a = x and b beyond y — the row comparison spelled out.
 */
export function beyond(order: Order, row: Record<string, unknown>) {
  return {
    OR: order.map(([column, direction], index) => ({
      ...Object.fromEntries(order.slice(0, index).map(([equal]) => [equal, row[equal]])),
      [column]: { [direction === "asc" ? "gt" : "lt"]: row[column] },
    })),
  };
}

export type ListConnection<Row> = {
  edges: { cursor: string; node: Row }[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  countRows: CountRows;
  /** A list of publication versions: its count within an access token's reach (counted-connection.ts). */
  countByPublication?: CountByPublication;
};

/**
 * The connection of a page read as `page` says, with up to `take + 1` rows in reading order: the
 * extra row only tells there is more.
 */
export function connectionOf<Row>(
  rows: Row[],
  page: { take: number; backwards: boolean },
  args: PageArgs,
  cursorOf: (row: Row) => string,
  countRows: CountRows,
): ListConnection<Row> {
  const more = rows.length > page.take;
  const nodes = rows.slice(0, page.take);
  if (page.backwards) nodes.reverse();
  const edges = nodes.map((node) => ({ cursor: cursorOf(node), node }));
  return {
    edges,
    pageInfo: {
      hasNextPage: page.backwards ? args.before != null : more,
      hasPreviousPage: page.backwards ? more : args.after != null,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
    countRows,
  };
}

/** The Prisma model a list is read from: the named item's order columns, the page, the count. */
type ListModel = { findFirst(args: never): Promise<unknown>; findMany(args: never): Promise<unknown[]>; count(args: never): Promise<number> };

/**
 * One page of `list` from `model`: the rows in `scope` (the parent's, the caller's), narrowed by
 * `where`, with the selection Pothos planned (`query`). A cursor is looked up in the same scope,
 * so an id from another parent is an error, not an empty page. The count covers scope and where.
 */
export async function readConnection<Row extends { id: string }>(
  model: ListModel,
  list: KeysetList,
  args: PageArgs,
  { scope, where = {}, query = {} }: { scope: object; where?: object; query?: object },
): Promise<ListConnection<Row>> {
  const page = await pageOf<object>(
    list,
    args,
    (id, select) => model.findFirst({ where: { AND: [{ id }, scope] }, select } as never) as Promise<Record<string, unknown> | null>,
  );
  const rows = (await model.findMany({ ...query, where: { AND: [scope, where, page.where] }, orderBy: page.orderBy, take: page.take + 1 } as never)) as Row[];
  return connectionOf(
    rows,
    page,
    args,
    (row) => encodeGlobalId(list.typename, row.id),
    () => boundedCount(model, { AND: [scope, where] }),
  );
}

function cursorError(argument: "after" | "before", cursor: string, typename: string): GraphQLError {
  return new GraphQLError(`${argument}: ${JSON.stringify(cursor)} is not the cursor of a ${typename} in this list.`, {
    extensions: { code: "BAD_USER_INPUT", argument },
  });
}

/**
 * A page of a list held as ids in a JSON column, in their stored order: the ids between the
 * cursors (ids of `typename` in `ids`), at most `first` (or the last `last`) of them. `read`
 * loads those rows; the count is the number of ids held.
 */
export async function readIdsConnection<Row extends { id: string }>(
  list: ListPage,
  args: PageArgs,
  ids: readonly string[],
  read: (ids: string[]) => Promise<Row[]>,
): Promise<ListConnection<Row>> {
  const { take, backwards } = sizeOf(list, args);
  const indexOf = (argument: "after" | "before", cursor: string) => {
    const decoded = decodeGlobalId(cursor);
    const index = decoded?.typename === list.typename ? ids.indexOf(decoded.id) : -1;
    if (index < 0) throw cursorError(argument, cursor, list.typename);
    return index;
  };
  const start = args.after != null ? indexOf("after", args.after) + 1 : 0;
  const end = args.before != null ? indexOf("before", args.before) : ids.length;
  const window = ids.slice(start, Math.max(start, end));
  const more = window.length > take;
  const rows = await read(backwards ? window.slice(-take) : window.slice(0, take));
  const edges = rows.map((node) => ({ cursor: encodeGlobalId(list.typename, node.id), node }));
  return {
    edges,
    pageInfo: {
      hasNextPage: backwards ? args.before != null : more,
      hasPreviousPage: backwards ? more : args.after != null,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
    countRows: async () => ids.length,
  };
}

type ConnectionFieldOptions<Parent, Args> = {
  /** The Prisma model of the items (its Pothos object type), or the object type of items read otherwise. */
  type: string | object;
  list: ListPage;
  description: string;
  /** The connection's type name; its edge's is the same ending in Edge. */
  name: string;
  /** A connection type several parents share (sharedListConnection), instead of one named `name`. */
  shared?: object;
  args?: object;
  /** The columns every row needs for its cursor (default its id). */
  cursorSelect?: Record<string, true>;
  resolve: (query: object, parent: Parent, args: Args & PageArgs, ctx: GraphQLContext) => Promise<ListConnection<unknown>>;
  /** More field extensions (TRACE_RECORDS). */
  extensions?: Record<string, unknown>;
};

/**
 * A list connection field: Relay's arguments, the list's largest page as an extension, the
 * count fields, and for a Prisma type the selection Pothos plans for the nodes (as for a
 * prismaConnection), handed to `resolve` as `query`.
 */
export function listConnection<Parent = { id: string }, Args = object>(
  // biome-ignore lint/suspicious/noExplicitAny: any object's field builder
  t: any,
  { type, list, description, name, shared, args, cursorSelect = { id: true }, resolve, extensions }: ConnectionFieldOptions<Parent, Args>,
) {
  const ref = typeof type === "string" ? getRefFromModel(type as never, builder as never) : type;
  const typeName = typeof type === "string" ? type : undefined;
  return t.connection(
    {
      type: ref,
      description,
      args,
      extensions: { ...extensions, [PAGE_SIZES]: { defaultSize: list.defaultSize, maxSize: list.maxSize, listMax: true } satisfies PageSizes },
      resolve: async (parent: Parent, fieldArgs: Args & PageArgs, ctx: GraphQLContext, info: GraphQLResolveInfo) => {
        const query = typeName
          ? await queryFromInfo({ context: ctx, info, typeName, select: cursorSelect, paths: [["edges", "node"]], awaitSelections: true } as never)
          : {};
        return resolve(query as object, parent, fieldArgs, ctx);
      },
    },
    ...(shared ? [shared] : [{ name, fields: countFields() }, { name: name.replace(/Connection$/, "Edge") }]),
  );
}

/** A list connection type (with its count fields) for lists of the same items on several parents. */
export function sharedListConnection(type: object, name: string) {
  return builder.connectionObject({ type: type as never, name, fields: countFields() as never }, { name: name.replace(/Connection$/, "Edge") });
}
