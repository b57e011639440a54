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
function sizeFault(schema: unknown): { fault: string } | { chars: number } {
  const deep = firstProblem(schema, (_item, depth) => (depth > INPUT_SCHEMA_MAX_DEPTH ? true : undefined));
  if (deep) return { fault: `it nests deeper than ${INPUT_SCHEMA_MAX_DEPTH} levels` };
  const chars = JSON.stringify(schema).length;
  return chars > INPUT_SCHEMA_MAX_CHARS
    ? { fault: `it takes ${groupedDigits(chars)} characters as JSON, more than ${groupedDigits(INPUT_SCHEMA_MAX_CHARS)}` }
    : { chars };
}

/**
 * Why a tool's input schema is not one a model can be offered, or null when it is: the protocol's
 * own rule (a JSON object with `type: "object"`, `properties` an object of schemas, `required` a
 * list of names), within INPUT_SCHEMA_MAX_DEPTH levels and INPUT_SCHEMA_MAX_CHARS characters.
 * Model APIs refuse a request whose tool parameters break it, which would fail every run offered
 * the tool, not only its calls.
 */
function schemaFault(schema: unknown): { fault: string } | { chars: number } {
  if (schema === undefined) return { fault: "it has none" };
  if (!isJsonObject(schema)) return { fault: "it is not a JSON object" };
  const size = sizeFault(schema);
  if ("fault" in size) return size;
  if (schema.type !== "object") return { fault: `its type is ${typeName(schema.type)}, not "object"` };
  const { properties, required } = schema;
  if (properties !== undefined && !(isJsonObject(properties) && Object.values(properties).every(isJsonObject))) {
    return { fault: "its properties are not an object of schemas" };
  }
  if (required !== undefined && !(Array.isArray(required) && required.every((name) => typeof name === "string"))) {
    return { fault: "its required is not a list of names" };
  }
  return size;
}

/** The most characters a tool's name may take: a tool with a longer one is skipped (a cut name would call nothing). */
export const TOOL_NAME_MAX_CHARS = 512;
/** The most characters of a tool's description kept; the rest is cut, and the tool says so. */
export const TOOL_DESCRIPTION_MAX_CHARS = 8_192;

/** The most characters the tools kept from one listing may take in all (mcp-limits.ts). */
export const LISTING_MAX_CHARS = 4_194_304;

/**
 * A description as runs are offered it: whole within TOOL_DESCRIPTION_MAX_CHARS, else its first
 * characters (never half a surrogate pair) and a note the model reads, with why for a person.
 */
function keptDescription(description: string): { description: string; descriptionCut?: string } {
  if (description.length <= TOOL_DESCRIPTION_MAX_CHARS) return { description };
  const end = /[\uD800-\uDBFF]/.test(description[TOOL_DESCRIPTION_MAX_CHARS - 1]!) ? TOOL_DESCRIPTION_MAX_CHARS - 1 : TOOL_DESCRIPTION_MAX_CHARS;
  const why = `the server's description takes ${groupedDigits(description.length)} characters: only its first ${groupedDigits(TOOL_DESCRIPTION_MAX_CHARS)} are kept`;
  return { description: `${description.slice(0, end)} [… cut: ${why}]`, descriptionCut: why };
}

/**
 * One listed tool as runs are offered it and the characters it keeps (name, description, input
 * schema as JSON), or why it is skipped. Only a tool without a name or with one longer than
 * TOOL_NAME_MAX_CHARS is skipped: nothing could call it. A description that is not text is left
 * out, one longer than TOOL_DESCRIPTION_MAX_CHARS is cut and says so (`descriptionCut`); an input
 * schema that is not an object schema is replaced by an open one (`OPEN_INPUT_SCHEMA`), and the
 * tool says so (`inputSchemaReplaced`): the server still checks the arguments it is given.
 */
export function readListedTool(raw: unknown, position: number): { tool: McpToolInfo; chars: number } | { skipped: McpSkippedTool } {
  if (!isJsonObject(raw)) return { skipped: { position, reason: "not a JSON object" } };
  const { name } = raw;
  if (typeof name !== "string" || name === "") {
    return { skipped: { position, reason: name === undefined || name === "" ? "it has no name" : "its name is not text" } };
  }
  if (name.length > TOOL_NAME_MAX_CHARS) {
    return { skipped: { position, reason: `its name takes ${groupedDigits(name.length)} characters, more than ${groupedDigits(TOOL_NAME_MAX_CHARS)}` } };
  }
  const text = typeof raw.description === "string" ? keptDescription(raw.description) : { description: undefined };
  const schema = schemaFault(raw.inputSchema);
  const chars = name.length + (text.description?.length ?? 0);
  if ("chars" in schema) return { tool: { name, ...text, inputSchema: raw.inputSchema as Record<string, unknown> }, chars: chars + schema.chars };
  const inputSchemaReplaced = `the server's input schema: ${schema.fault}`;
  return { tool: { name, ...text, inputSchema: { ...OPEN_INPUT_SCHEMA }, inputSchemaReplaced }, chars: chars + JSON.stringify(OPEN_INPUT_SCHEMA).length };
}
