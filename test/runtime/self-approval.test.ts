// No model output decides an approval: a run with Dossier's own MCP server attached (a key that
// may DECIDE) cannot approve its own held call through `decide_tool_call` in the same reply. A
// tool that decides tool calls is held for a person whatever the rules, even under "*": "never".
import { describe, expect, it } from "vitest";
import type { ToolApprovalRecord } from "../../src/domain/runs/tool-approval-service.js";
import type { Transact } from "../../src/domain/transaction.js";
import { stepGate } from "../../src/runtime/loop/held-calls.js";
import { createMcpTools } from "../../src/runtime/mcp/mcp-tools.js";
import type { McpRegistry } from "../../src/runtime/mcp/mcp-registry.js";
import { decidesToolCalls } from "../../src/runtime/tools/approval-policy.js";
import { InMemoryTraceSink } from "../support/in-memory-trace-sink.js";

const schema = { type: "object", properties: { runId: { type: "string" }, toolCallId: { type: "string" }, decision: { type: "string" } } };

describe("a tool that decides tool calls", () => {
  it("is held for a person under rules that hold nothing, while the server's other tools run at once", async () => {
    const registry = {
      snapshot: async () => [
        {
          serverName: "dossier",
          connection: { id: "conn-1", hash: "h", requireApproval: false },
          tools: ["decide_tool_call", "get_run"].map((name) => ({ name, inputSchema: schema })),
        },
      ],
    } as unknown as McpRegistry;
    const sink = new InMemoryTraceSink();
    const tools = new Map((await createMcpTools(registry, "principal-1", sink)).map((tool) => [tool.schema.name, tool]));
    const requests: unknown[] = [];
    const write: Transact = (work) => work({} as never, []);
    const store = {
      ofRun: async () => [],
      request: async (_tx: unknown, approval: Omit<ToolApprovalRecord, "id">) => {
        requests.push(approval);
        return { id: `approval-${requests.length}`, ...approval } as ToolApprovalRecord;
      },
      markStarted: async () => undefined,
    } as never;
    const gate = stepGate(
      { store, rules: { "*": "never" }, timeoutMs: 60_000 },
      { run: { id: "run-1" }, write, sink, profile: {}, tools },
      {
        calls: [],
        messageId: "m1",
        approvals: [],
      },
    );
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool" });
    // The model approving its own held call (an id it chose itself) in the same reply: held, not run.
    const decide = { id: "c2", name: "mcp__dossier__decide_tool_call", arguments: '{"runId":"run-1","toolCallId":"c1","decision":"APPROVE"}' };
    expect(await gate(decide, span)).toEqual({ type: "pending" });
    expect(requests).toEqual([expect.objectContaining({ toolCallId: "c2", mcpTool: "dossier/decide_tool_call" })]);
    expect(await gate({ id: "c3", name: "mcp__dossier__get_run", arguments: '{"runId":"run-1"}' }, span)).toEqual({ type: "execute" });
  });

  it("is named decide_tool_call in any case, with any separators or affixes", () => {
    for (const name of ["decide_tool_call", "DecideToolCall", "dossier-decide-tool-call", "decide.tool.call"]) expect(decidesToolCalls(name)).toBe(true);
    for (const name of ["get_run", "cancel_run", "decide", "tool_call", "list_decisions"]) expect(decidesToolCalls(name)).toBe(false);
  });
});
