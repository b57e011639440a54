// Typed reads of JSON columns: one reader per column, each checked against its shape with zod
// where the row enters the code, rather than an `as` cast at every use. Prisma types a JSON
// column as any JSON value; what Dossier stored there is known only here. A value of the wrong
// shape (a hand-edited row, a migration gone wrong) fails loudly at the read, naming the column.
// Objects keep the keys their schema does not name (looseObject): reading changes nothing.
//
// (prisma-json-types-generator would type the columns in the generated client instead, but it
// only asserts the types, checks nothing at run time, and ships its own TypeScript 6 compiler.)
import { z } from "zod";

function reader<S extends z.ZodType>(column: string, schema: S): (value: unknown) => z.output<S> {
  return (value) => {
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    throw new Error(`${column} does not hold what Dossier stores there: ${z.prettifyError(parsed.error)}`);
  };
}

const toolCall = z.looseObject({ id: z.string(), name: z.string(), arguments: z.string() });

/** Message.toolCalls: an assistant message's tool calls; null for other messages. */
export const toolCallsOf = reader("message.tool_calls", z.array(toolCall).nullable());

const strings = z.array(z.string());

/** AgentProfile.tools / AgentProfile.skills: the names allowed; null means the default set. */
export const profileNamesOf: (value: unknown) => string[] | null = reader("agent_profile.tools/skills", strings.nullable());

/** CheckpointVersion.nextSteps. */
export const nextStepsOf: (value: unknown) => string[] | null = reader("checkpoint_version.next_steps", strings.nullable());

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
export const attributesOf: (value: unknown) => Record<string, unknown> = reader("span.attributes", z.record(z.string(), z.unknown()));

const usage = z.looseObject({ input: z.number(), output: z.number(), cached: z.number(), reasoning: z.number() });

/** Span.usage: a model span's token usage; null for other spans. */
export const usageOf: (value: unknown) => z.output<typeof usage> | null = reader("span.usage", usage.nullable());

/** TraceChange.spanAfter: the span after a change (with what undoes its attributes); null for a start. */
export const spanAfterOf = reader(
  "trace_change.span_after",
  z
    .looseObject({
      status: z.string(),
      endedAt: z.string().nullable(),
      usage: z.unknown(),
      undo: z.looseObject({ added: strings, before: z.record(z.string(), z.unknown()) }).optional(),
    })
    .nullable(),
);
