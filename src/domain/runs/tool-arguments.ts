// Arguments a person writes for a held tool call (an EDIT decision), checked against the tool's
// input schema as it was when the call was held (ToolApproval.inputSchema). The check runs where
// the decision is taken — any instance, no connection to the tool's MCP server needed — so an
// invalid edit is refused at once and the call keeps waiting. The schema is bounded first
// (bounded-schema.ts): the tool's own, it may not make the check slow.
import { z } from "zod";
import { boundedSchema } from "./bounded-schema.js";
import { ValidationError, type ValidationIssue } from "../errors.js";
import { fromStored } from "../text/stored-text.js";

/** The most JSON text an edit may hold: arguments are instructions, not payloads. */
export const EDITED_ARGUMENTS_MAX = 100_000;

/**
 * The edited arguments as the JSON text the call runs with, or a ValidationError naming the
 * offending field as `arguments.<path>` (e.g. `arguments.args.0`). A request held before schemas
 * were kept (`storedSchema` null), or whose schema cannot be read or is not bounded enough to check
 * these arguments with, only needs a JSON object. Regular expressions in a schema are not applied.
 */
export function checkEditedArguments(value: unknown, storedSchema: string | null): string {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ValidationError([{ field: "arguments", message: "must be a JSON object of the tool's arguments" }]);
  }
  const text = JSON.stringify(value);
  if (text.length > EDITED_ARGUMENTS_MAX) {
    throw new ValidationError([{ field: "arguments", message: `must be at most ${EDITED_ARGUMENTS_MAX} characters of JSON` }]);
  }
  const schema = schemaOf(storedSchema, value);
  if (!schema) return text;
  const checked = schema.safeParse(value);
  if (checked.success) return text;
  const issues: ValidationIssue[] = checked.error.issues.map((issue) => ({
    field: ["arguments", ...issue.path.map(String)].join("."),
    message: issue.message,
  }));
  throw new ValidationError(issues);
}

function schemaOf(stored: string | null, value: unknown): z.ZodType | null {
  const bounded = stored ? boundedSchema(fromStored(stored), value) : null;
  if (!bounded) return null;
  try {
    return z.fromJSONSchema(bounded as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    // A schema zod cannot read (a draft feature it lacks) checks nothing beyond the object shape:
    // the tool itself still checks what it is given, as it does the model's arguments.
    return null;
  }
}
