// What an MCP server answers to a tool call is data for the model, kept as it came: never checked
// against the tool's `outputSchema`, never refused for its shape. The SDK's own checks would do
// both: it runs the server's JSON Schema (its regular expressions included) over the structured
// content in the process every principal shares (a pattern such as `^(a+)+$` takes exponential
// time on a short string), refuses a text-only answer of a tool that declares an output schema,
// and refuses the whole answer for one content block of a type it does not know.
import type { JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { z } from "zod";
import type { McpCallResult } from "../ports/mcp.js";
import { isJsonObject } from "../../domain/json-object.js";
import { jsonText } from "../../domain/json-text.js";

/**
 * The output-schema "validator" given to the SDK's client: it compiles nothing and accepts every
 * value, so listing tools never runs (or fails on) a server's schema.
 */
export const keepEveryResult: jsonSchemaValidator = {
  getValidator<T>(): JsonSchemaValidator<T> {
    return (input) => ({ valid: true, data: input as T, errorMessage: undefined });
  },
};

/** A `tools/call` result as requested: any object, every field kept for `resultText` to read. */
export const AnyCallToolResult = z.looseObject({});

type Block = { type?: unknown; text?: unknown; mimeType?: unknown; uri?: unknown; resource?: { uri?: unknown; text?: unknown } };

/** A string as is, nothing as "", any other value as its JSON (however deeply it nests: never lost). */
const asText = (value: unknown): string => (typeof value === "string" ? value : value === undefined ? "" : jsonText(value));

/** One content block as the model sees it: text as is, a resource's text, a placeholder for the rest. */
function blockText(block: unknown): string {
  if (!isJsonObject(block)) return "[content omitted]";
  const item = block as Block;
  const resource = isJsonObject(item.resource) ? item.resource : undefined;
  if (item.type === "text") return asText(item.text);
  if (item.type === "resource") return typeof resource?.text === "string" ? resource.text : `[resource ${asText(resource?.uri)}]`;
  if (item.type === "resource_link") return `[resource link ${asText(item.uri)}]`;
  const type = typeof item.type === "string" ? item.type : "content";
  return `[${type}${typeof item.mimeType === "string" ? ` ${item.mimeType}` : ""} omitted]`;
}

/**
 * The text the model is shown for a tool's answer: its content blocks one a line; the structured
 * content as JSON when there are none.
 */
export function resultText(result: Record<string, unknown>): McpCallResult {
  const parts = Array.isArray(result.content) ? result.content.map(blockText) : [];
  if (parts.length === 0 && result.structuredContent !== undefined && result.structuredContent !== null) parts.push(asText(result.structuredContent));
  return { text: parts.join("\n"), isError: result.isError === true };
}
