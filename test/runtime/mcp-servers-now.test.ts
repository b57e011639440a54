// What a step reads of its MCP servers before their calls are gated (loop/mcp-servers-now.ts): one
// read for the step, only when it calls an MCP tool; the flags read written to the pinned servers;
// a server not stored or turned off declines its calls.
import { describe, expect, it } from "vitest";
import type { McpServerApproval } from "../../src/domain/capabilities/mcp-server-service.js";
import { goneServerResult, mcpServersNow } from "../../src/runtime/loop/mcp-servers-now.js";
import type { PinnedMcpServer, Tool } from "../../src/runtime/ports/tool.js";

const tool = (name: string, mcpServer?: PinnedMcpServer): [string, Tool] => [
  name,
  { schema: { name, description: name, parameters: {} }, ...(mcpServer && { mcpServer }), execute: async () => "" },
];
const call = (name: string, id = name) => ({ id, name, arguments: "{}" });

function stored(rows: McpServerApproval[]) {
  const reads: string[][] = [];
  return { reads, approvalsOf: async (ids: readonly string[]) => (reads.push([...ids]), rows.filter((row) => ids.includes(row.id))) };
}

describe("a step's MCP servers as stored", () => {
  it("reads nothing for a step without MCP calls", () => {
    const servers = stored([]);
    const notes: PinnedMcpServer = { serverId: "s1", serverName: "notes", requireApproval: false };
    const tools = new Map([tool("task_list"), tool("mcp__notes__echo", notes)]);
    expect(mcpServersNow(servers, [call("task_list"), call("no_such_tool")], tools)).toBeUndefined();
    expect(servers.reads).toEqual([]);
  });

  it("reads the step's servers once, writes their flags, and declines the calls of a server gone or turned off", async () => {
    const notes: PinnedMcpServer = { serverId: "s1", serverName: "notes", requireApproval: false };
    const off: PinnedMcpServer = { serverId: "s2", serverName: "off", requireApproval: false };
    const gone: PinnedMcpServer = { serverId: "s3", serverName: "gone", requireApproval: true };
    const servers = stored([
      { id: "s1", enabled: true, requireApproval: true },
      { id: "s2", enabled: false, requireApproval: false },
    ]);
    const tools = new Map([
      tool("task_list"),
      tool("mcp__notes__echo", notes),
      tool("mcp__notes__fail", notes),
      tool("mcp__off__x", off),
      tool("mcp__gone__y", gone),
    ]);
    const calls = [call("task_list"), call("mcp__notes__echo"), call("mcp__notes__fail"), call("mcp__off__x"), call("mcp__gone__y")];
    const current = mcpServersNow(servers, calls, tools)!;
    const verdicts = await Promise.all(calls.map((each) => current(each.name)));
    expect(verdicts).toEqual([null, null, null, goneServerResult({ name: "mcp__off__x" }, "off"), goneServerResult({ name: "mcp__gone__y" }, "gone")]);
    expect(servers.reads).toEqual([["s1", "s2", "s3"]]);
    expect([notes.requireApproval, off.requireApproval, gone.requireApproval]).toEqual([true, false, true]);
  });
});
