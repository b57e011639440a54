// Plain lists ([X!]!) that grow with use are served a page at a time, and read a page at a time:
// `first` is the LIMIT of the list's own query, and `after` — the global id of the last item the
// client already has — a keyset condition on the list's order columns. A page costs the same
// however long the list has grown, and the next one starts exactly after the item named: no
// OFFSET, and no row read only to be dropped. The lists keep their plain shape (clients read them
// as lists); a page with fewer than `first` items is the last.
//
// `after` is an item's id, so a page after it first reads that item's order columns; each of these
// lists is then read by its own query, once per parent (but for the first page of a span's
// events, which the spans of a request read together: see types/trace.ts). Connections read in
// their parent's statement carry the order columns in their cursor instead (newest-first-page.ts).
import type { ArgBuilder } from "@pothos/core";
import { GraphQLError } from "graphql";
import type { builder } from "./builder.js";
import { decodeGlobalId } from "./global-id.js";

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

type Direction = "asc" | "desc";

/** A list's page sizes, and the type of its items: `after` must be one of their ids. */
export type ListPage = { typename: string; defaultSize: number; maxSize: number };

export type PlainList = ListPage & {
  /** The order, most significant column first; together the columns are unique (the last is the tiebreak). */
  order: readonly (readonly [column: string, direction: Direction])[];
};

/**
 * Page sizes of the lists one run fills by the hundreds — its trace's spans and events, its
 * material ledger (every catalog version listed to it is an entry): an ordinary run's fit one page.
 */
export const LONG_PAGE = { defaultSize: 500, maxSize: 1_000 } as const;
/** Page sizes of every other growing list: today's lists fit one page in ordinary use. */
export const LIST_PAGE = { defaultSize: 100, maxSize: 500 } as const;

/**
 * The field extension naming a plain list's largest page. The request limits (server/hardening.ts)
 * hold `first` on such a field to it, instead of to the connections' MAX_PAGE_SIZE.
 */
export const PLAIN_LIST_MAX_SIZE = "plainListMaxSize";

/** The `first` and `after` arguments of a plain list. */
export function pageArgs(arg: ArgBuilder<Types>, list: ListPage) {
  return {
    first: arg.int({ defaultValue: list.defaultSize, description: `How many items, 1 to ${count(list.maxSize)}.` }),
    after: arg.id({ description: "The id of the last item you already have: the page starts right after it." }),
  };
}

/** The field extension stating a plain list's largest page. */
export function pageExtensions(list: ListPage) {
  return { [PLAIN_LIST_MAX_SIZE]: list.maxSize };
}

/** The field options every plain list shares: its arguments and the extension stating its largest page. */
export function pageOptions(arg: ArgBuilder<Types>, list: ListPage) {
  return { args: pageArgs(arg, list), extensions: pageExtensions(list) };
}

/** A list's description: what it holds and in which order, then how to page through it. */
export function describePage(what: string, list: ListPage | PlainList): string {
  const order = "order" in list ? list.order : [];
  const ties = order.length > 1 && order.at(-1)![0] === "id" ? " Items that tie in that order come by id." : "";
  return (
    `${what}${ties} A page holds \`first\` items (default ${count(list.defaultSize)}, at most ${count(list.maxSize)}); ` +
    "for the next page pass the id of the last item as `after`. A page with fewer than `first` items is the last."
  );
}

const count = (n: number) => n.toLocaleString("en-US");

/**
 * A refused `first`, in the words the request limits (server/hardening.ts) refuse a connection's;
 * they refuse a plain list's too large `first` with this error before anything runs.
 */
export function pageSizeError(first: number, maxSize: number): GraphQLError | null {
  if (first < 1) return new GraphQLError(`first: ${first} asks for no items; ask for 1 to ${maxSize}.`, { extensions: { code: "BAD_USER_INPUT" } });
  if (first > maxSize) {
    return new GraphQLError(`first: ${first} asks for more than ${maxSize} items; page through the list with "after" instead.`, {
      extensions: { code: "PAGE_TOO_LARGE" },
    });
  }
  return null;
}

export type PageArgs = { first?: number | null; after?: string | number | null };

export type Page<Where> = {
  take: number;
  orderBy: Record<string, Direction>[];
  /** The keyset condition that starts the page after `after`; empty for the first page. */
  where: Where;
};

/**
 * One page of `list`. `findAfter` reads the item `after` names — by its database id, among the
 * items of this parent the caller may see — selecting `select` (its order columns), or null. An
 * id of another type, or of no item of this parent, is an error rather than an empty page, so a
 * client never takes a wrong cursor for the end of the list.
 */
export async function pageOf<Where>(
  list: PlainList,
  { first, after }: PageArgs,
  findAfter: (id: string, select: Record<string, true>) => Promise<Record<string, unknown> | null>,
): Promise<Page<Where>> {
  const take = first ?? list.defaultSize;
  const refused = pageSizeError(take, list.maxSize);
  if (refused) throw refused;
  const orderBy = list.order.map(([column, direction]) => ({ [column]: direction }));
  if (after === null || after === undefined) return { take, orderBy, where: {} as Where };
  const decoded = decodeGlobalId(String(after));
  const select = Object.fromEntries(list.order.map(([column]) => [column, true as const]));
  const row = decoded?.typename === list.typename ? await findAfter(decoded.id, select) : null;
  if (!row) throw afterError(after, list.typename);
  return { take, orderBy, where: beyond(list.order, row) as Where };
}

/**
 * The rows after `row` in `order`, as a Prisma condition: (a, b) after (x, y) is a beyond x, or
 * a = x and b beyond y — the row comparison spelled out.
 */
export function beyond(order: PlainList["order"], row: Record<string, unknown>) {
  return {
    OR: order.map(([column, direction], index) => ({
      ...Object.fromEntries(order.slice(0, index).map(([equal]) => [equal, row[equal]])),
      [column]: { [direction === "asc" ? "gt" : "lt"]: row[column] },
    })),
  };
}

/** The Prisma model a plain list is read from: the named item's order columns, then the page. */
type ListModel = { findFirst(args: never): Promise<unknown>; findMany(args: never): Promise<unknown[]> };

/**
 * One page of `list` from `model`: the rows in `scope` (the parent's, the caller's), narrowed by
 * `where`, with the selection Pothos planned (`query`). The `after` item is looked up in the same
 * scope, so an id from another parent is an error, not an empty page.
 */
export async function readPage<Row>(
  model: ListModel,
  list: PlainList,
  args: PageArgs,
  { scope, where = {}, query = {} }: { scope: object; where?: object; query?: object },
): Promise<Row[]> {
  const page = await pageOf<object>(
    list,
    args,
    (id, select) => model.findFirst({ where: { id, ...scope }, select } as never) as Promise<Record<string, unknown> | null>,
  );
  return (await model.findMany({ ...query, where: { ...scope, ...where, ...page.where }, orderBy: page.orderBy, take: page.take } as never)) as Row[];
}

function afterError(after: string | number, typename: string): GraphQLError {
  return new GraphQLError(`after: ${JSON.stringify(String(after))} is not the id of a ${typename} in this list.`, {
    extensions: { code: "BAD_USER_INPUT" },
  });
}

/**
 * A page of a list held as ids in a JSON column, in their stored order: the ids after the one
 * `after` names (of `typename`, and in `ids`), at most `first` of them. The caller reads just
 * those rows, with `take` set to their number.
 */
export function pageOfIds(list: ListPage, { first, after }: PageArgs, ids: readonly string[]): string[] {
  const take = first ?? list.defaultSize;
  const refused = pageSizeError(take, list.maxSize);
  if (refused) throw refused;
  if (after === null || after === undefined) return ids.slice(0, take);
  const decoded = decodeGlobalId(String(after));
  const index = decoded?.typename === list.typename ? ids.indexOf(decoded.id) : -1;
  if (index < 0) throw afterError(after, list.typename);
  return ids.slice(index + 1, index + 1 + take);
}
