// Whether the MCP servers of a step's calls require approval, as stored when the calls are gated —
// not as this worker last heard over `mcp:changed`. An owner who turns requireApproval on holds the
// next call of the server's tools in every run at once, however late the worker hears of the
// change (Redis slow or down, the message lost): no call slips past a person meanwhile.
//
// One statement per step, by primary key, for all the step's servers: made when its first MCP call
// is gated (with or without a decision). A step that calls no MCP tool reads nothing. What is read
// decides the step's calls (`requires`, asked besides the connection's flag and the other sources
// of the policy): a registry sync that began before the owner's change and lands after the step's
// read resets the shared connection, not the step's answer, so no later call of the step runs
// unheld. The shared connection is left to the registry's syncs: every step that calls a server's
// tools reads it again. A read that fails fails the step (the attempt is handed back): no call
// runs on a guess.
//
// A server no longer stored (deleted, or replaced under its name) or turned off since the run
// began: its calls do not run, approved ones included, and nobody is asked to approve them either
// (a person would approve a tool its owner has withdrawn). The model is told the server is gone,
// as a call on a connection the registry retired is.
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

/** What a step's gate asks of its MCP servers as stored (mcpServersNow). */
export type McpStepServers = {
  /** Null once the call's server was read (or for a tool of no MCP server), or the result the model sees instead when its server is gone. */
  current: (toolName: string) => Promise<string | null>;
  /** Whether the tool's server requires approval as this step read it (false before the read, and for a tool of no MCP server). */
  requires: (toolName: string) => boolean;
};

/**
 * For the step of `calls`, what brings a call's MCP server up to date before the approval policy
 * is asked (ApprovalGateOptions.current), and what the step read of its requireApproval.
 * Undefined when no call of the step is of an MCP tool: such a step reads nothing.
 */
export function mcpServersNow(servers: McpServersNow, calls: readonly ToolCall[], tools: ReadonlyMap<string, Tool>): McpStepServers | undefined {
  const pinned = new Map<string, PinnedMcpServer>();
  for (const call of calls) {
    const server = tools.get(call.name)?.mcpServer;
    if (server) pinned.set(server.serverId, server);
  }
  if (pinned.size === 0) return undefined;
  /** Each server's requireApproval as this step read it: the step's own, whatever a sync writes to the connection later. */
  const stored = new Map<string, boolean>();
  let read: Promise<ReadonlySet<string>> | undefined;
  /** The ids of the step's servers stored and enabled now; each one's requireApproval kept for the step. */
  const present = () =>
    (read ??= servers.approvalsOf([...pinned.keys()]).then((rows) => {
      for (const row of rows) stored.set(row.id, row.requireApproval);
      return new Set(rows.filter((row) => row.enabled).map((row) => row.id));
    }));
  return {
    current: async (toolName) => {
      const server = tools.get(toolName)?.mcpServer;
      if (!server) return null;
      return (await present()).has(server.serverId) ? null : goneServerResult({ name: toolName }, server.serverName);
    },
    requires: (toolName) => {
      const server = tools.get(toolName)?.mcpServer;
      return server !== undefined && stored.get(server.serverId) === true;
    },
  };
}
