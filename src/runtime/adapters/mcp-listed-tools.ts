// The tools of a `tools/list` answer, read one by one: one odd tool never costs the server its
// other tools. The SDK's own reading refuses the whole answer for one tool that strays from its
// schema (an input schema without `type: "object"`, a description that is not text, an unknown
// annotation's shape), which left the server FAILED and every tool of it unusable.
import { z } from "zod";
import type { McpSkippedTool, McpToolInfo } from "../ports/mcp.js";
import { isJsonObject } from "../../domain/json-object.js";
import { firstProblem } from "../../domain/json-walk.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";

/** A page of `tools/list` as requested: any object; its tools are read by `readListedTool`. */
export const AnyToolsPage = z.looseObject({ tools: z.array(z.unknown()).optional(), nextCursor: z.unknown().optional() });

/** The input schema a tool is offered with when the server's is not an object schema: any JSON object of arguments. */
export const OPEN_INPUT_SCHEMA: Readonly<Record<string, unknown>> = Object.freeze({ type: "object" });

/** A schema's `type` as a reason shows it: a short text quoted, anything else by its kind. */
const typeName = (type: unknown): string =>
  type === undefined ? "missing" : typeof type === "string" ? JSON.stringify(type.slice(0, 40)) : Array.isArray(type) ? "a list" : typeof type;

/** The most levels an input schema may nest (the schema itself is level 0): real ones take a handful. */
export const INPUT_SCHEMA_MAX_DEPTH = 64;
/** The most characters an input schema may take as JSON text. */
export const INPUT_SCHEMA_MAX_CHARS = 65_536;

/**
 * Why a schema is too deep or too large to be offered, or null. The depth is found without
 * recursion (json-walk.ts); only a schema within it is written as JSON to measure its size, which
 * then cannot overflow the stack. A schema past either bound would fail every run offered the
 * tool (its digest, its token count and the request body all write it as JSON).
 */
function sizeFault(schema: unknown): string | null {
  const deep = firstProblem(schema, (_item, depth) => (depth > INPUT_SCHEMA_MAX_DEPTH ? true : undefined));
  if (deep) return `it nests deeper than ${INPUT_SCHEMA_MAX_DEPTH} levels`;
  const chars = JSON.stringify(schema).length;
  return chars > INPUT_SCHEMA_MAX_CHARS ? `it takes ${groupedDigits(chars)} characters as JSON, more than ${groupedDigits(INPUT_SCHEMA_MAX_CHARS)}` : null;
}

/**
 * Why a tool's input schema is not one a model can be offered, or null when it is: the protocol's
 * own rule (a JSON object with `type: "object"`, `properties` an object of schemas, `required` a
 * list of names), within INPUT_SCHEMA_MAX_DEPTH levels and INPUT_SCHEMA_MAX_CHARS characters.
 * Model APIs refuse a request whose tool parameters break it, which would fail every run offered
 * the tool, not only its calls.
 */
function schemaFault(schema: unknown): string | null {
  if (schema === undefined) return "it has none";
  if (!isJsonObject(schema)) return "it is not a JSON object";
  const size = sizeFault(schema);
  if (size) return size;
  if (schema.type !== "object") return `its type is ${typeName(schema.type)}, not "object"`;
  const { properties, required } = schema;
  if (properties !== undefined && !(isJsonObject(properties) && Object.values(properties).every(isJsonObject))) {
    return "its properties are not an object of schemas";
  }
  if (required !== undefined && !(Array.isArray(required) && required.every((name) => typeof name === "string"))) {
    return "its required is not a list of names";
  }
  return null;
}

/**
 * One listed tool as runs are offered it, or why it is skipped. Only a tool without a name is
 * skipped: nothing could call it. A description that is not text is left out; an input schema
 * that is not an object schema is replaced by an open one (`OPEN_INPUT_SCHEMA`), and the tool
 * says so (`inputSchemaReplaced`): the server still checks the arguments it is given.
 */
export function readListedTool(raw: unknown, position: number): { tool: McpToolInfo } | { skipped: McpSkippedTool } {
  if (!isJsonObject(raw)) return { skipped: { position, reason: "not a JSON object" } };
  if (typeof raw.name !== "string" || raw.name === "") {
    return { skipped: { position, reason: raw.name === undefined || raw.name === "" ? "it has no name" : "its name is not text" } };
  }
  const description = typeof raw.description === "string" ? raw.description : undefined;
  const fault = schemaFault(raw.inputSchema);
  if (fault === null) return { tool: { name: raw.name, description, inputSchema: raw.inputSchema as Record<string, unknown> } };
  return { tool: { name: raw.name, description, inputSchema: { ...OPEN_INPUT_SCHEMA }, inputSchemaReplaced: `the server's input schema: ${fault}` } };
}
