// Whether the MCP servers of a step's calls require approval, as stored when the calls are gated —
// not as this worker last heard over `mcp:changed`. An owner who turns requireApproval on holds the
// next call of the server's tools in every run at once, however late the worker hears of the
// change (Redis slow or down, the message lost): no call slips past a person meanwhile.
//
// One statement per step, by primary key, for all the step's servers: made when its first MCP call
// without a decision is gated. A step that calls no MCP tool, or whose calls all have decisions (a
// resumed step), reads nothing. What is read is written to each pinned connection, so later
// steps, and the registry's other runs on it, agree until its next sync. A read that fails fails
// the step (the attempt is handed back): no call runs on a guess.
//
// A server no longer stored (deleted, or replaced under its name) or turned off since the run
// began: its calls do not run, and nobody is asked to approve them either (a person would approve
// a tool its owner has withdrawn). The model is told the server is gone, as a call on a
// connection the registry retired is.
import type { McpServerService } from "../../domain/capabilities/mcp-server-service.js";
import type { ToolCall } from "../ports/model.js";
import type { PinnedMcpServer, Tool } from "../ports/tool.js";

/** Where the servers' flags are read (McpServerService.approvalsOf). */
export type McpServersNow = Pick<McpServerService, "approvalsOf">;

/** The result the model sees for a call of a server removed or turned off since the run began. */
export function goneServerResult(call: Pick<ToolCall, "name">, serverName: string): string {
  return (
    `[not executed: the MCP server "${serverName}" of "${call.name}" was removed or turned off after this run started; ` +
    `its tools are unavailable to this run.]`
  );
}

/**
 * For the step of `calls`, what brings a call's MCP server up to date before the approval policy
 * is asked (ApprovalGateOptions.current): null once its pinned flag is as stored (or for a tool of
 * no MCP server), or the result the model sees instead when its server is gone. Undefined when no
 * call of the step is of an MCP tool: such a step reads nothing.
 */
export function mcpServersNow(
  servers: McpServersNow,
  calls: readonly ToolCall[],
  tools: ReadonlyMap<string, Tool>,
): ((toolName: string) => Promise<string | null>) | undefined {
  const pinned = new Map<string, PinnedMcpServer>();
  for (const call of calls) {
    const server = tools.get(call.name)?.mcpServer;
    if (server) pinned.set(server.serverId, server);
  }
  if (pinned.size === 0) return undefined;
  let read: Promise<ReadonlySet<string>> | undefined;
  /** The ids of the step's servers stored and enabled now; each one's requireApproval written to its pinned connection. */
  const present = () =>
    (read ??= servers.approvalsOf([...pinned.keys()]).then((rows) => {
      for (const row of rows) {
        const server = pinned.get(row.id);
        if (server) server.requireApproval = row.requireApproval;
      }
      return new Set(rows.filter((row) => row.enabled).map((row) => row.id));
    }));
  return async (toolName) => {
    const server = tools.get(toolName)?.mcpServer;
    if (!server) return null;
    return (await present()).has(server.serverId) ? null : goneServerResult({ name: toolName }, server.serverName);
  };
}
