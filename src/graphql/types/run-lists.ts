// The caller's runs as lists a UI shows: filtered (RunFilter), in either order of admission or
// most expensive first, paged by a keyset on (createdAt, id) or (cost, id), and counted. A page is one statement (two after a cursor:
// the cursor's run is read first, among the caller's); the count is one more, when selected.
// Every filter field is served by an index of `run` (schema.prisma; test/db/run-filter-plans.test.ts).
//
// The cursor is the run's global id, looked up among the caller's runs (not only the filtered
// ones): a page after a run that has since left the filter still starts at its place. Runs
// admitted while a client pages never shift the pages it has not read yet in oldest-first order,
// and appear only before its first page in newest-first order.
import type { Prisma } from "../../generated/prisma/client.js";
import { runFilterWhere } from "../../domain/runs/run-filter.js";
import { builder } from "../builder.js";
import { boundedCount, COUNT_BOUND } from "../counted-connection.js";
import type { GraphQLContext } from "../context.js";
import { encodeGlobalId } from "../global-id.js";
import { connectionOf, describePage, type KeysetList, listConnection, pageOf } from "../list-connection.js";
import { myRuns } from "./owned.js";
import { type RunOrder, RunFilterInput, RunOrderEnum, runFilterFromInput } from "./run-filter.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";

const PAGE = { typename: "Run", defaultSize: 20, maxSize: 100 } as const;
const ORDERS: Record<RunOrder, KeysetList> = {
  CREATED_AT_DESC: {
    ...PAGE,
    order: [
      ["createdAt", "desc"],
      ["id", "desc"],
    ],
  },
  CREATED_AT_ASC: {
    ...PAGE,
    order: [
      ["createdAt", "asc"],
      ["id", "asc"],
    ],
  },
  // Served by the index (owner_id, cost DESC, id DESC).
  COST_DESC: {
    ...PAGE,
    order: [
      ["cost", "desc"],
      ["id", "desc"],
    ],
  },
};

type FilterArg = typeof RunFilterInput.$inferInput | null | undefined;

/** The caller's runs the filter holds, as one Prisma condition (the scope and the filter ANDed, never merged). */
function filteredRuns(ctx: GraphQLContext, input: FilterArg): Prisma.RunWhereInput {
  const filter = runFilterFromInput(input);
  // An id of another type names no workspace or conversation: the list is empty, not an error.
  return { AND: [myRuns(ctx), filter === "matches-nothing" ? { id: { in: [] } } : runFilterWhere(filter)] };
}

builder.queryField("runs", (t) =>
  listConnection<unknown, { filter?: FilterArg; orderBy?: RunOrder | null }>(t, {
    type: "Run",
    name: "RunConnection",
    list: ORDERS.CREATED_AT_DESC,
    description: describePage(
      "Your runs, newest first unless `orderBy` says otherwise, narrowed by `filter` (an access token's: those it may read). `totalCount` and `countCapped` count the filtered list.",
      ORDERS.CREATED_AT_DESC,
    ),
    args: {
      filter: t.arg({ type: RunFilterInput, description: "Only the runs matching it; none: all of your runs." }),
      orderBy: t.arg({ type: RunOrderEnum, description: "Default CREATED_AT_DESC (newest first)." }),
    },
    resolve: async (query, _root, args, ctx) => {
      const list = ORDERS[args.orderBy ?? "CREATED_AT_DESC"];
      const where = filteredRuns(ctx, args.filter);
      const page = await pageOf<Prisma.RunWhereInput>(list, args, (id, select) => ctx.prisma.run.findFirst({ where: { id, ...myRuns(ctx) }, select }));
      const rows = await ctx.prisma.run.findMany({ ...query, where: { AND: [where, page.where] }, orderBy: page.orderBy, take: page.take + 1 });
      return connectionOf(
        rows,
        page,
        args,
        (row) => encodeGlobalId("Run", row.id),
        () => boundedCount(ctx.prisma.run, where),
      );
    },
  }),
);

builder.queryField("runsCount", (t) =>
  t.int({
    description: `How many of your runs the filter holds (an access token's: those it may read), exactly up to ${groupedDigits(COUNT_BOUND)}; past that it says ${groupedDigits(COUNT_BOUND)}, and \`runs(filter: …) { countCapped }\` (the same filter) is true. One bounded statement.`,
    args: { filter: t.arg({ type: RunFilterInput }) },
    resolve: async (_root, args, ctx) => Math.min(await boundedCount(ctx.prisma.run, filteredRuns(ctx, args.filter)), COUNT_BOUND),
  }),
);
