// A run's MCP tools: the registry's snapshot at the run's start, one Tool per server tool,
// named `mcp__<server>__<tool>` (fitted to model APIs; the tool keeps its full name and which
// server tool it is, for approvals). Whether a call waits for approval is the server's
// requireApproval as stored when the step's calls are gated: read from the database then
// (loop/mcp-servers-now.ts), not only taken from what this worker last heard over `mcp:changed`
// (the pinned connection's flag, which holds a call too) — a change not heard yet (Redis slow or down, the message lost)
// lets no call past a person. A tool that decides tool calls (Dossier's own `decide_tool_call`)
// always waits: no model output may decide an approval (approval-policy.ts, decidesToolCalls).
// Each call is an MCP_CALL span under the tool call's span and holds a lease on the pinned
// connection while it is in flight.
import type { Tool } from "../ports/tool.js";
import { ToolError } from "../ports/tool.js";
import type { TraceSink } from "../ports/trace-sink.js";
import { withSpan } from "../loop/spans.js";
import { decidesToolCalls } from "../tools/approval-policy.js";
import type { McpRegistry } from "./mcp-registry.js";
import { fullMcpToolName, mcpToolOf } from "../ports/mcp-tool-names.js";
import { mcpToolDefinitions } from "./mcp-tool-definitions.js";

/**
 * `signal`: the run's; connecting and listing count against its deadline. `ended`: aborts when the
 * attempt is over; its connections are held until then (not closed as idle).
 */
export async function createMcpTools(registry: McpRegistry, principalId: string, sink: TraceSink, signal?: AbortSignal, ended?: AbortSignal): Promise<Tool[]> {
  const servers = await registry.snapshot(principalId, signal, ended);
  return servers.flatMap(({ serverName, connection, tools }) =>
    mcpToolDefinitions(serverName, connection.hash, tools).map(({ tool, digest, schema }): Tool => {
      const decides = decidesToolCalls(tool.name);
      return {
        // The flag as the registry last synced it; the step's gate also holds the call by its own read of the stored flag.
        requiresApproval: () => connection.requireApproval || decides,
        mcpServer: connection,
        fullName: fullMcpToolName(serverName, tool.name),
        mcpTool: mcpToolOf(serverName, tool.name),
        mcpDigest: digest,
        schema,
        async execute(args, context) {
          if (typeof args !== "object" || args === null || Array.isArray(args)) throw new ToolError("arguments must be a JSON object");
          return withSpan(
            sink,
            {
              traceId: context.span.traceId,
              parent: context.span,
              kind: "MCP_CALL",
              name: `mcp ${serverName}/${tool.name}`,
              attributes: { "mcp.server": serverName, "mcp.tool": tool.name, "mcp.connection": connection.id },
            },
            async () => {
              const result = await registry.call(connection, tool.name, args as Record<string, unknown>, context.signal);
              if (result.isError) throw new ToolError(result.text || `${tool.name} failed`);
              return result.text;
            },
          );
        },
      };
    }),
  );
}
