// Names of MCP tools as the model sees them: `mcp__<server>__<tool>`. Model APIs accept
// [A-Za-z0-9_-]{1,64}, so other characters become `_` and long names are cut; when two of one
// server's tools end up with the same name, the one whose original name sorts first keeps it
// and the others get `_2`, `_3`, … — the same list always yields the same names.
import type { McpToolInfo } from "./mcp.js";

export const MCP_TOOL_PREFIX = "mcp__";
const MAX_TOOL_NAME = 64;

export type NamedMcpTool = McpToolInfo & { exposedName: string };

export function mcpToolName(server: string, tool: string): string {
  const clean = tool.replace(/[^A-Za-z0-9_-]/g, "_") || "_";
  return `${MCP_TOOL_PREFIX}${server}__${clean}`.slice(0, MAX_TOOL_NAME);
}

/** The tool's name before it is fitted to model APIs: what approval rules also see (tools/approval-policy.ts). */
export function fullMcpToolName(server: string, tool: string): string {
  return `${MCP_TOOL_PREFIX}${server}__${tool}`;
}

/** Which tool of which server: `<server>/<tool>` (server names hold no `/`), as approval requests record it. */
export function mcpToolOf(server: string, tool: string): string {
  return `${server}/${tool}`;
}

/** The server's tools with unique, deterministic exposed names (stable under list order). */
export function nameMcpTools(server: string, tools: readonly McpToolInfo[]): NamedMcpTool[] {
  const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const taken = new Set<string>();
  return sorted.map((tool) => {
    const base = mcpToolName(server, tool.name);
    let exposedName = base;
    for (let n = 2; taken.has(exposedName); n += 1) {
      const suffix = `_${n}`;
      exposedName = `${base.slice(0, MAX_TOOL_NAME - suffix.length)}${suffix}`;
    }
    taken.add(exposedName);
    return { ...tool, exposedName };
  });
}
