// The filter and order of run lists (runs, runsCount, and the live list): the wire shapes of
// domain/runs/run-filter.ts, with global ids decoded.
import { GraphQLError } from "graphql";
import { ValidationError } from "../../domain/errors.js";
import { parseRunFilter, type RunFilter } from "../../domain/runs/run-filter.js";
import { METADATA_BYTES_MAX, METADATA_KEYS_MAX, TAG_LENGTH_MAX, TAGS_MAX } from "../../domain/runs/run-labels.js";
import { RunStatus } from "../../generated/prisma/enums.js";
import { builder } from "../builder.js";
import { idOfType } from "../global-id.js";

// Defined here, not in types/run.ts: run.ts reads the filter, and the filter reads the status.
export const RunStatusEnum = builder.enumType(RunStatus, { name: "RunStatus" });

/** What tags and metadata may hold, as AdmitRunInput and updateRunTags describe it (domain/runs/run-labels.ts). */
export const TAGS_RULE = `at most ${TAGS_MAX} distinct tags, each 1–${TAG_LENGTH_MAX} characters after trimming, with a visible one and no control or invisible format character (zero-width space, direction mark)`;
export const METADATA_RULE = `a flat object of string values, at most ${METADATA_KEYS_MAX} keys (each following the rule of a tag) and ${METADATA_BYTES_MAX / 1024} KB as JSON`;

export const RunFilterInput = builder.inputType("RunFilter", {
  description:
    "Which runs a list holds: every field given narrows it (fields combine with AND); an empty list or object sets no condition. Another principal's runs are never in it, and an access token's list holds only the runs it may read.",
  fields: (t) => ({
    workspaceId: t.id({ description: "Runs admitted in this workspace." }),
    conversationId: t.id({ description: "Runs of this conversation." }),
    scheduleId: t.id({ description: "Runs the fires of this schedule admitted (Run.schedule)." }),
    status: t.field({ type: [RunStatusEnum], description: "Runs in any of these statuses." }),
    tagsAll: t.stringList({ description: "Runs carrying every one of these tags." }),
    tagsAny: t.stringList({ description: "Runs carrying at least one of these tags." }),
    metadata: t.field({
      type: "JSON",
      description: 'Runs whose metadata has exactly this value under each key given (a flat object of strings, e.g. {"ticket": "T-1"}).',
    }),
    agent: t.string({ description: "Runs executed under this agent profile." }),
    createdAfter: t.field({ type: "DateTime", description: "Runs admitted strictly after this instant." }),
    createdBefore: t.field({ type: "DateTime", description: "Runs admitted strictly before this instant." }),
    costAbove: t.field({
      type: "Decimal",
      description:
        'Runs whose cost so far (Run.cost, USD) is strictly above this amount, e.g. "0.50": a non-negative decimal string with at most 10 digits before and after the point. A run with unpriced model calls (Run.costUnpriced) is compared by the cost of its priced ones.',
    }),
  }),
});

export const RUN_ORDERS = ["CREATED_AT_DESC", "CREATED_AT_ASC", "COST_DESC"] as const;
export type RunOrder = (typeof RUN_ORDERS)[number];

export const RunOrderEnum = builder.enumType("RunOrder", {
  description: "The order of a run list; runs that tie in it (admitted at the same instant, or costing the same) come by id.",
  values: {
    CREATED_AT_DESC: { description: "Newest first (the default)." },
    CREATED_AT_ASC: { description: "Oldest first." },
    COST_DESC: {
      description:
        "Most expensive first (Run.cost so far), runs that cost the same by id, descending. A running run's cost grows with each model call, and the page after a cursor starts after that run at its cost now: while runs spend, a run that moved up past the pages already read is not seen again, and one read before may be read again. Paged through ended runs (a status filter) the list is stable; a live list follows runsChanged, which says UPDATED each time a run's cost changes.",
    },
  } as const,
});

type RunFilterArg = typeof RunFilterInput.$inferInput;

/**
 * The filter as the domain reads it. An id of another type matches no run (as an id of nobody's
 * workspace does); any other invalid field is refused with BAD_USER_INPUT naming it.
 */
export function runFilterFromInput(input: RunFilterArg | null | undefined): RunFilter | "matches-nothing" {
  if (!input) return {};
  const workspaceId = input.workspaceId != null ? idOfType(String(input.workspaceId), "Workspace") : null;
  const conversationId = input.conversationId != null ? idOfType(String(input.conversationId), "Conversation") : null;
  const scheduleId = input.scheduleId != null ? idOfType(String(input.scheduleId), "Schedule") : null;
  if ((input.workspaceId != null && !workspaceId) || (input.conversationId != null && !conversationId) || (input.scheduleId != null && !scheduleId))
    return "matches-nothing";
  try {
    return parseRunFilter({ ...input, workspaceId, conversationId, scheduleId });
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new GraphQLError(error.message, { extensions: { code: "BAD_USER_INPUT", argument: "filter", issues: error.issues } });
  }
}
