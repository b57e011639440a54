// What runs are offered of one listing of a server's tools, made once per listing and shared by
// every run that pins it: each tool's name for the model, its digest (what a held call was held
// as) and its schema as the model reads it. A listing is kept as it arrived until the server's
// tools are listed again (a new listing), so it keys what was made of it; a principal's runs no
// longer hash every schema and copy it for the model each time they start.
// Also the bound on a principal's listings together: MCP_PRINCIPAL_TOOLS_MAX tools and
// MCP_PRINCIPAL_LISTING_MAX_CHARS characters across all of its servers.
import { createHash } from "node:crypto";
import type { McpToolInfo } from "../ports/mcp.js";
import { type NamedMcpTool, nameMcpTools } from "../ports/mcp-tool-names.js";
import type { ToolSchema } from "../ports/model.js";
import { jsonText } from "../../domain/json-text.js";
import { forModel, forModelJson } from "../../domain/text/stored-text.js";
import { groupedDigits } from "../../domain/text/grouped-digits.js";

/** The most tools one principal's servers offer a run in all: servers past it (by name) are not offered. */
export const MCP_PRINCIPAL_TOOLS_MAX = 1_000;
/** The most characters (names, descriptions, input schemas as JSON) one principal's servers' tools take in all. */
export const MCP_PRINCIPAL_LISTING_MAX_CHARS = 8_388_608;

export type McpToolDefinition = { tool: NamedMcpTool; digest: string; schema: ToolSchema };

const definitions = new WeakMap<readonly McpToolInfo[], { serverName: string; endpointHash: string; made: McpToolDefinition[] }>();
const sizes = new WeakMap<readonly McpToolInfo[], number>();

/**
 * What a call of the tool was held as (Tool.mcpDigest): its endpoint's hash, the tool's name,
 * description and input schema. Never throws, however deeply the schema nests (json-text.ts).
 */
function mcpToolDigest(endpointHash: string, tool: McpToolInfo): string {
  const shown = { endpoint: endpointHash, tool: tool.name, description: tool.description ?? null, inputSchema: tool.inputSchema };
  return createHash("sha256").update(jsonText(shown)).digest("hex");
}

/** The listing's tools as runs are offered them, made on the first use of this listing under this name. */
export function mcpToolDefinitions(serverName: string, endpointHash: string, tools: readonly McpToolInfo[]): readonly McpToolDefinition[] {
  const known = definitions.get(tools);
  if (known && known.serverName === serverName && known.endpointHash === endpointHash) return known.made;
  const made = nameMcpTools(serverName, tools).map((tool) => ({
    tool,
    digest: mcpToolDigest(endpointHash, tool),
    // What the server wrote is shown to the model as messages are (shownToModel): NUL and
    // unpaired surrogates, which strict model APIs refuse, as visible placeholders.
    schema: {
      name: tool.exposedName,
      description: forModel(`[MCP server ${serverName}] ${tool.description ?? tool.name}`),
      parameters: forModelJson(tool.inputSchema),
    },
  }));
  definitions.set(tools, { serverName, endpointHash, made });
  return made;
}

/** The characters a listing's tools take (names, descriptions, input schemas as JSON), counted once per listing. */
function listingChars(tools: readonly McpToolInfo[]): number {
  let chars = sizes.get(tools);
  if (chars === undefined) {
    chars = tools.reduce((sum, tool) => sum + tool.name.length + (tool.description?.length ?? 0) + jsonText(tool.inputSchema).length, 0);
    sizes.set(tools, chars);
  }
  return chars;
}

/**
 * Why each listing, taken in the order given (the servers by name), is not offered, or null:
 * a listing that would take the principal's tools past MCP_PRINCIPAL_TOOLS_MAX or
 * MCP_PRINCIPAL_LISTING_MAX_CHARS is left out whole, and later ones that fit are kept.
 */
export function pastPrincipalBound(listings: readonly (readonly McpToolInfo[])[]): (string | null)[] {
  let tools = 0;
  let chars = 0;
  return listings.map((listing) => {
    const size = listingChars(listing);
    if (tools + listing.length > MCP_PRINCIPAL_TOOLS_MAX) {
      return `this server's ${groupedDigits(listing.length)} tools and the ${groupedDigits(tools)} of your servers before it (by name) go past the ${groupedDigits(MCP_PRINCIPAL_TOOLS_MAX)} tools a run is offered in all`;
    }
    if (chars + size > MCP_PRINCIPAL_LISTING_MAX_CHARS) {
      return `this server's tools take ${groupedDigits(size)} characters, and those of your servers before it (by name) ${groupedDigits(chars)}: a run is offered at most ${groupedDigits(MCP_PRINCIPAL_LISTING_MAX_CHARS)} in all`;
    }
    tools += listing.length;
    chars += size;
    return null;
  });
}
