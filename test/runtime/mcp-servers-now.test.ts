// What a step reads of its MCP servers before their calls are gated (loop/mcp-servers-now.ts): one
// read for the step, only when it calls an MCP tool; the flags read written to the pinned servers
// and kept for the step (a sync landing later holds none of its calls less); a server not stored
// or turned off declines its calls.
import { describe, expect, it } from "vitest";
import type { McpServerApproval } from "../../src/domain/capabilities/mcp-server-service.js";
import type { ToolApprovalRecord } from "../../src/domain/runs/tool-approval-service.js";
import type { Transact } from "../../src/domain/transaction.js";
import { stepGate } from "../../src/runtime/loop/held-calls.js";
import { goneServerResult, mcpServersNow } from "../../src/runtime/loop/mcp-servers-now.js";
import type { PinnedMcpServer, Tool } from "../../src/runtime/ports/tool.js";
import { InMemoryTraceSink } from "../support/in-memory-trace-sink.js";

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

  it("reads the step's servers once, keeps their flags for the step alone, and declines the calls of a server gone or turned off", async () => {
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
    const { current, requires } = mcpServersNow(servers, calls, tools)!;
    expect(requires("mcp__notes__echo")).toBe(false);
    const verdicts = await Promise.all(calls.map((each) => current(each.name)));
    expect(calls.map((each) => requires(each.name))).toEqual([false, true, true, false, false]);
    expect(verdicts).toEqual([null, null, null, goneServerResult({ name: "mcp__off__x" }, "off"), goneServerResult({ name: "mcp__gone__y" }, "gone")]);
    expect(servers.reads).toEqual([["s1", "s2", "s3"]]);
    // The shared connections are the registry's syncs' to set: the step's read stays the step's.
    expect([notes.requireApproval, off.requireApproval, gone.requireApproval]).toEqual([false, false, true]);
  });

  it("holds every call of the step as the step read its server, though a sync resets the connection's flag meanwhile", async () => {
    const notes: PinnedMcpServer = { serverId: "s1", serverName: "notes", requireApproval: false };
    const tools = new Map<string, Tool>([["mcp__notes__echo", { ...tool("mcp__notes__echo", notes)[1], requiresApproval: () => notes.requireApproval }]]);
    const calls = [call("mcp__notes__echo", "c1"), call("mcp__notes__echo", "c2")];
    const requests: string[] = [];
    const write: Transact = (work) => work({} as never, []);
    const sink = new InMemoryTraceSink();
    const gate = stepGate(
      {
        store: {
          ofRun: async () => [],
          request: async (_tx, approval) => (requests.push(approval.toolCallId), { id: `a-${approval.toolCallId}`, ...approval }) as ToolApprovalRecord,
          markStarted: async () => undefined,
        },
        timeoutMs: 60_000,
        mcpServers: stored([{ id: "s1", enabled: true, requireApproval: true }]),
      },
      { run: { id: "run-1" }, write, sink, profile: {}, tools },
      { calls, messageId: "m1", approvals: [] },
    );
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool mcp__notes__echo" });
    expect(await gate(calls[0]!, span)).toEqual({ type: "pending" });
    // A sync whose read began before the owner's change lands now: the connection's flag is off again.
    notes.requireApproval = false;
    expect(await gate(calls[1]!, span)).toEqual({ type: "pending" });
    expect(requests).toEqual(["c1", "c2"]);
  });
});
