// The share of a request MCP tool definitions may take (R14). Every tool a principal's servers
// list is offered to every run of the principal: a server listing many tools, or long ones, could
// otherwise fill the context window before the run's first request, failing every run with
// CONTEXT_OVERFLOW. The tools are offered in the order runs are offered them (servers by name, each
// server's tools by name) while their definitions fit the share; those after are not offered to
// the run, and its trace says which and why.
import type { Tool } from "../ports/tool.js";
import type { SpanRef, TraceSink } from "../ports/trace-sink.js";
import type { ToolSchema } from "../ports/model.js";
import { note } from "../loop/spans.js";

/** What the share is measured with: its size in tokens, and a tool definition's tokens. */
export type McpToolBudget = { mcpToolShare(): number; toolTokens(schema: ToolSchema): number };

/**
 * The tools offered to the run: the MCP tools in their order up to the first whose definition
 * would take the MCP tools past the share (it and every MCP tool after it are left out, so the
 * tools offered do not depend on which later ones are short), and every other tool as it is.
 * `leftOut`: the MCP tools not offered, by their full names (`<server>/<tool>`), in that order.
 */
export function fitMcpTools(tools: ReadonlyMap<string, Tool>, budget: McpToolBudget): { tools: Map<string, Tool>; leftOut: string[] } {
  const share = budget.mcpToolShare();
  const offered = new Map<string, Tool>();
  const leftOut: string[] = [];
  let used = 0;
  for (const [name, tool] of tools) {
    if (tool.mcpTool === undefined) {
      offered.set(name, tool);
      continue;
    }
    if (leftOut.length === 0) {
      used += budget.toolTokens(tool.schema);
      if (used <= share) {
        offered.set(name, tool);
        continue;
      }
    }
    leftOut.push(tool.mcpTool);
  }
  return { tools: offered, leftOut };
}

/**
 * `fitMcpTools`, the tools left out recorded on the attempt's span when there are any: a CONTEXT
 * event { mcpToolShare, mcpToolsLeftOut, reason }.
 */
export async function offeredTools(tools: Map<string, Tool>, budget: McpToolBudget, sink: TraceSink, span: SpanRef): Promise<Map<string, Tool>> {
  const fitted = fitMcpTools(tools, budget);
  if (fitted.leftOut.length === 0) return tools;
  const share = budget.mcpToolShare();
  const reason = `MCP tool definitions may take ${share} tokens of a request (a quarter of the context window after its reserves); these, after those that fill it, are not offered to this run`;
  await note(sink, span, "CONTEXT", { mcpToolShare: share, mcpToolsLeftOut: fitted.leftOut, reason });
  return fitted.tools;
}
