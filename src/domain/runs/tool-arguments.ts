// Arguments a person writes for a held tool call (an EDIT decision), checked against the tool's
// input schema as it was when the call was held (ToolApproval.inputSchema). The check runs where
// the decision is taken — any instance, no connection to the tool's MCP server needed — so an
// invalid edit is refused at once and the call keeps waiting. The schema is bounded first
// (bounded-schema.ts): the tool's own, it may not make the check slow.
import { z } from "zod";
import { boundedSchema } from "./bounded-schema.js";
import { ValidationError, type ValidationIssue } from "../errors.js";
import { firstProblem } from "../json-walk.js";
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
  const inexact = inexactNumberPath(value);
  if (inexact) {
    throw new ValidationError([
      {
        field: ["arguments", ...inexact].join("."),
        message:
          "must be a number JSON keeps exactly: finite, and a whole number only within ±(2^53 - 1) (a larger one may have lost digits on the way: send it as a string)",
      },
    ]);
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

/**
 * The path of the first number of the edited arguments that does not run as the person wrote it:
 * an integer past ±(2^53 - 1) (`9007199254740993` arrives as 9007199254740992, the value parsed
 * before it reaches Dossier) or one past the double range (`1e400` arrives as Infinity, sent on as
 * null). A number whose digits were already rounded to another one within the safe range (a
 * fraction longer than a double holds, `1e-400` read as 0) cannot be told once parsed, and passes.
 */
function inexactNumberPath(value: unknown): string[] | undefined {
  const inexact = (item: unknown) =>
    typeof item === "number" && !(Number.isFinite(item) && (!Number.isInteger(item) || Number.isSafeInteger(item))) ? true : undefined;
  return firstProblem(value, inexact)?.path;
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
