// Which runs a list shows (runs(filter), runsCount, and the live list): one RunFilter, read three
// ways that must agree — validated once (`parseRunFilter`), turned into the Prisma condition the
// lists read with (`runFilterWhere`, every field served by an index of `run`: schema.prisma), and
// matched in memory against a run's columns (`runMatchesFilter`, for a run that just changed).
//
// Every field narrows the list; fields combine with AND. An empty list (status: [], tagsAll: [],
// tagsAny: []) or an empty metadata object sets no condition, as if the field were left out. The
// filter never widens who may see a run: callers add the principal's (and an access token's)
// scope next to it.
import { z } from "zod";
import type { Prisma, Run } from "../../generated/prisma/client.js";
import { RunStatus } from "../../generated/prisma/enums.js";
import { type DecimalInput, toDecimal } from "../costs/pricing.js";
import { parseInput } from "../validation.js";
import { label, metadataObject, metadataPairs, TAGS_MAX } from "./run-labels.js";

export type RunFilter = {
  workspaceId?: string | null;
  conversationId?: string | null;
  /** Runs a fire of this schedule admitted. */
  scheduleId?: string | null;
  /** Any of these statuses. */
  status?: readonly RunStatus[] | null;
  /** Every one of these tags. */
  tagsAll?: readonly string[] | null;
  /** At least one of these tags. */
  tagsAny?: readonly string[] | null;
  /** Each key with exactly this value. */
  metadata?: Readonly<Record<string, string>> | null;
  agent?: string | null;
  /** Created strictly after this instant. */
  createdAfter?: Date | null;
  /** Created strictly before this instant. */
  createdBefore?: Date | null;
  /** Cost (USD, Run.cost) strictly above this amount: a decimal string. */
  costAbove?: string | null;
};

const filterTags = z.array(label("tag")).max(TAGS_MAX, `at most ${TAGS_MAX} tags`).nullish();

const runFilterSchema = z.object({
  workspaceId: z.string().nullish(),
  conversationId: z.string().nullish(),
  scheduleId: z.string().nullish(),
  status: z.array(z.enum(RunStatus)).nullish(),
  tagsAll: filterTags,
  tagsAny: filterTags,
  metadata: metadataObject.nullish(),
  agent: z.string().max(64).nullish(),
  createdAfter: z.date().nullish(),
  createdBefore: z.date().nullish(),
  costAbove: z
    .string()
    .trim()
    .regex(/^\d{1,10}(\.\d{1,10})?$/, 'a non-negative decimal amount in USD, e.g. "0.50" (at most 10 digits before and after the point)')
    .nullish(),
});

/** The filter, validated (a ValidationError names each wrong field, under `filter.`); no filter: every run. */
export function parseRunFilter(input: unknown): RunFilter {
  if (input == null) return {};
  return parseInput(z.object({ filter: runFilterSchema }), { filter: input }).filter;
}

const given = <T>(list: readonly T[] | null | undefined): list is readonly T[] => list != null && list.length > 0;

/** The filter as a Prisma condition on `run`. Add the caller's scope next to it. */
export function runFilterWhere(filter: RunFilter): Prisma.RunWhereInput {
  const where: Prisma.RunWhereInput = {};
  if (filter.workspaceId != null) where.workspaceId = filter.workspaceId;
  if (filter.conversationId != null) where.conversationId = filter.conversationId;
  if (filter.scheduleId != null) where.scheduleId = filter.scheduleId;
  if (given(filter.status)) where.status = { in: [...filter.status] };
  if (filter.agent != null) where.agent = filter.agent;
  if (filter.createdAfter != null || filter.createdBefore != null) {
    where.createdAt = {
      ...(filter.createdAfter != null ? { gt: filter.createdAfter } : {}),
      ...(filter.createdBefore != null ? { lt: filter.createdBefore } : {}),
    };
  }
  if (filter.costAbove != null) where.cost = { gt: filter.costAbove };
  if (given(filter.tagsAll)) where.tags = { hasEvery: [...filter.tagsAll] };
  // tagsAll and tagsAny together: both conditions on the one array column.
  if (given(filter.tagsAny)) where.AND = [{ tags: { hasSome: [...filter.tagsAny] } }];
  const pairs = filter.metadata ? metadataPairs(filter.metadata) : [];
  if (pairs.length > 0) where.metadataPairs = { hasEvery: pairs };
  return where;
}

/** The run's columns a filter reads. */
export type FilteredRun = Pick<Run, "workspaceId" | "conversationId" | "scheduleId" | "status" | "tags" | "metadata" | "agent" | "createdAt"> & {
  cost: DecimalInput;
};

/** Whether the run is in the filter's list: the same answer `runFilterWhere` gives in SQL. */
export function runMatchesFilter(run: FilteredRun, filter: RunFilter): boolean {
  if (filter.workspaceId != null && run.workspaceId !== filter.workspaceId) return false;
  if (filter.conversationId != null && run.conversationId !== filter.conversationId) return false;
  if (filter.scheduleId != null && run.scheduleId !== filter.scheduleId) return false;
  if (given(filter.status) && !filter.status.includes(run.status)) return false;
  if (filter.agent != null && run.agent !== filter.agent) return false;
  if (filter.createdAfter != null && !(run.createdAt.getTime() > filter.createdAfter.getTime())) return false;
  if (filter.createdBefore != null && !(run.createdAt.getTime() < filter.createdBefore.getTime())) return false;
  if (filter.costAbove != null && !toDecimal(run.cost).greaterThan(toDecimal(filter.costAbove))) return false;
  const tags = run.tags ?? [];
  if (given(filter.tagsAll) && !filter.tagsAll.every((tag) => tags.includes(tag))) return false;
  if (given(filter.tagsAny) && !filter.tagsAny.some((tag) => tags.includes(tag))) return false;
  if (filter.metadata) {
    const metadata = (run.metadata ?? {}) as Record<string, unknown>;
    for (const [key, value] of Object.entries(filter.metadata)) if (metadata[key] !== value) return false;
  }
  return true;
}
