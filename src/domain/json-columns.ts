// Typed reads and writes of JSON columns: one reader per column, each checked against its shape
// with zod where the row enters the code, and writers typed as JSON, rather than an `as` cast at
// every use. Prisma types a JSON column as any JSON value; what Dossier stored there is known
// only here. A value of the wrong shape (a hand-edited row, a migration gone wrong) fails loudly
// at the read, naming the column. Objects keep the keys their schema does not name
// (looseObject): reading changes nothing.
//
// (prisma-json-types-generator would type the columns in the generated client instead, but it
// only asserts the types, checks nothing at run time, and ships its own TypeScript 6 compiler.)
import { z } from "zod";
import type { Prisma } from "../generated/prisma/client.js";

/** A JSON value, as Prisma reads a JSON column. */
export type JsonValue = Prisma.JsonValue;
export type JsonObject = Prisma.JsonObject;

/**
 * A value for a JSON column. Prisma's input type also takes anything with a `toJSON` (a Date,
 * stored as its text and read back as a string); this one takes JSON only, so what is written
 * reads back as the same type. Never null at the top: a nullable column is cleared with
 * Prisma.DbNull, not with a value.
 */
export function toJsonColumn(value: Exclude<JsonValue, null>): Prisma.InputJsonValue {
  return value;
}

/**
 * A value for a JSON column that the runtime builds from JSON but hands over typed as unknown:
 * span attributes (runtime/ports/trace-sink.ts) and a tool's arguments, parsed from the model's
 * JSON. Prisma writes it as JSON.stringify would. Typed, not walked: span attributes are written
 * on the trace recorder's path, which already walks them once to encode their text.
 */
export function untypedJsonColumn(value: unknown): Prisma.InputJsonValue {
  return value as Prisma.InputJsonValue;
}

/**
 * A checked read of a JSON column whose shape `schema` describes; the error names the column.
 * Exported for the columns whose schema lives with the code that writes them.
 */
export function jsonColumnReader<S extends z.ZodType>(column: string, schema: S): (value: JsonValue) => z.output<S> {
  return (value) => {
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    throw new Error(`${column} does not hold what Dossier stores there: ${z.prettifyError(parsed.error)}`);
  };
}

/** The readers below, each named after its column. */
const reader = jsonColumnReader;

/**
 * A value inside a column Prisma read: JSON by construction (the readers take Prisma's JSON
 * type), so it is typed as JSON without being walked again.
 */
const json = z.custom<JsonValue>();

const toolCall = z.looseObject({ id: z.string(), name: z.string(), arguments: z.string() });

/** Message.toolCalls: an assistant message's tool calls; null for other messages. */
export const toolCallsOf = reader("message.tool_calls", z.array(toolCall).nullable());

const strings = z.array(z.string());

/** McpServer.env / McpServer.headers: names with their values, sealed when secret. */
export const namedValuesOf = reader("mcp_server.env/headers", z.array(z.looseObject({ name: z.string(), value: z.string() })).nullable());

/** AgentProfile.tools / AgentProfile.skills: the names allowed; null means the default set. */
export const profileNamesOf: (value: JsonValue) => string[] | null = reader("agent_profile.tools/skills", strings.nullable());

/** AgentProfile.toolApprovals: tool-name pattern → "always" | "never"; null when the profile has none. */
export const approvalRulesOf: (value: JsonValue) => Record<string, "always" | "never"> | null = reader(
  "agent_profile.tool_approvals",
  z.record(z.string(), z.enum(["always", "never"])).nullable(),
);

/** CheckpointVersion.nextSteps. */
export const nextStepsOf: (value: JsonValue) => string[] | null = reader("checkpoint_version.next_steps", strings.nullable());

/** CheckpointVersion.acceptedVersionIds / citedVersionIds / sourceVersionIds: publication version ids. */
export const versionIdsOf: (value: JsonValue) => string[] | null = reader("checkpoint_version.*_version_ids", strings.nullable());

const question = z.looseObject({ id: z.string(), text: z.string(), status: z.enum(["OPEN", "RESOLVED"]) });

/** CheckpointVersion.questions. */
export const checkpointQuestionsOf = reader("checkpoint_version.questions", z.array(question).nullable());

const author = z.union([
  z.looseObject({ kind: z.literal("OWNER"), principalId: z.string() }),
  z.looseObject({ kind: z.literal("MODEL_RUN"), runId: z.string(), principalId: z.string() }),
]);
const provenance = z.looseObject({ author, sourceVersionIds: strings });

/** CheckpointVersion.sections: the provenance of each section (absent keys: no content). */
export const checkpointSectionsOf = reader(
  "checkpoint_version.sections",
  z.looseObject({
    summary: provenance.nullable().optional(),
    nextSteps: provenance.nullable().optional(),
    questions: z.record(z.string(), provenance).optional(),
  }),
);

/** Span.attributes: the span's attributes by name. */
export const attributesOf: (value: JsonValue) => Record<string, JsonValue> = reader("span.attributes", z.record(z.string(), json));

const usage = z.looseObject({ input: z.number(), output: z.number(), cached: z.number(), reasoning: z.number() });

/** Span.usage: a model span's token usage; null for other spans. */
export const usageOf: (value: JsonValue) => z.output<typeof usage> | null = reader("span.usage", usage.nullable());

/** TraceChange.spanAfter: the span after a change (with what undoes its attributes); null for a start. */
export const spanAfterOf = reader(
  "trace_change.span_after",
  z
    .looseObject({
      status: z.string(),
      endedAt: z.string().nullable(),
      usage: json,
      cost: z.string().nullable().optional(),
      costUnpriced: z.boolean().optional(),
      undo: z.looseObject({ added: strings, before: z.record(z.string(), json) }).optional(),
    })
    .nullable(),
);
