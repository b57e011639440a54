// Keys that read alike, put to the approval gate as a tool's held calls: at any depth of the
// arguments, under a schema that declares the nested object's properties and under one that
// declares none (an MCP tool's `{"type":"object"}`). None reaches a person; honest nested
// arguments do.
import { describe, expect, it } from "vitest";
import type { ToolApprovalRecord } from "../../src/domain/runs/tool-approval-service.js";
import type { Transact } from "../../src/domain/transaction.js";
import { approvalGate, unreadableKeyResult } from "../../src/runtime/tools/approval-gate.js";
import { InMemoryTraceSink } from "../support/in-memory-trace-sink.js";

const schemas: Record<string, Record<string, unknown>> = {
  read_file: {
    type: "object",
    properties: { name: { type: "string" }, file: { type: "object", properties: { name: { type: "string" }, path: { type: "string" } } } },
  },
  mcp__files__read: { type: "object" },
};

function gateOver(existing: Partial<ToolApprovalRecord>[] = []) {
  const requests: unknown[] = [];
  const started: string[] = [];
  const sink = new InMemoryTraceSink();
  const write: Transact = (work) => work({} as never, []);
  const gate = approvalGate({
    approvals: {
      request: async (_tx, approval) => (requests.push(approval), { id: `a${requests.length}`, ...approval }) as ToolApprovalRecord,
      markStarted: async (_tx, id) => void started.push(id),
    },
    needsApproval: () => true,
    inputSchemaOf: (name) => schemas[name] ?? null,
    mcpToolOf: () => null,
    existing: existing.map((a) => ({ messageId: "m1", startedAt: null, reason: null, decidedBy: null, ...a }) as ToolApprovalRecord),
    runId: "run-1",
    messageId: "m1",
    write,
    sink,
    timeoutMs: 60_000,
    now: () => new Date("2026-12-02T12:00:00Z"),
  });
  return { gate, requests, started, sink };
}

const filler = Array.from({ length: 300 }, (_, i) => `"k${i}":0`).join(",");

describe("the approval gate and keys that read alike", () => {
  it("never puts to a person a call whose nested or schema-less keys read alike", async () => {
    const { gate, requests, sink } = gateOver();
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool read_file" });
    const cases = [
      ["read_file", `{"file":{"narne":"notes.txt",${filler},"name":"/etc/shadow"}}`, { kind: "likeDeclared", key: "narne", like: "name" }],
      ["read_file", `{"file":{"path ":"/tmp/notes.txt",${filler},"path":"/etc/shadow"}}`, { kind: "likeDeclared", key: "path ", like: "path" }],
      ["read_file", `{"file":{"Name":"notes.txt",${filler},"name":"/etc/shadow"}}`, { kind: "likeDeclared", key: "Name", like: "name" }],
      ["mcp__files__read", `{"narne":"notes.txt",${filler},"name":"/etc/shadow"}`, { kind: "lookAlike", key: "name", like: "narne" }],
      ["mcp__files__read", `{"file":{"comrnand":"ls",${filler},"command":"rm"}}`, { kind: "lookAlike", key: "command", like: "comrnand" }],
    ] as const;
    for (const [i, [name, written, problem]] of cases.entries()) {
      const held = { id: `c${i}`, name, arguments: written };
      expect(await gate(held, span), written.slice(0, 30)).toEqual({ type: "decline", output: unreadableKeyResult(held, problem) });
    }
    expect(requests).toEqual([]);
  });

  it("holds honest nested arguments for a person, with or without declared properties", async () => {
    const { gate, requests, sink } = gateOver();
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool read_file" });
    const honest = '{"name":"notes","file":{"name":"notes.txt","path":"/tmp/notes.txt"}}';
    expect(await gate({ id: "c1", name: "read_file", arguments: honest }, span)).toEqual({ type: "pending" });
    expect(await gate({ id: "c2", name: "mcp__files__read", arguments: honest }, span)).toEqual({ type: "pending" });
    const plain = '{"query":{"id":1,"ids":[2,3],"name":"a","names":["b"]},"page":{"size":10}}';
    expect(await gate({ id: "c3", name: "mcp__files__read", arguments: plain }, span)).toEqual({ type: "pending" });
    expect(requests).toHaveLength(3);
  });

  it("does not run such a call approved as it was held, and runs a person's edit as they wrote it", async () => {
    const written = `{"file":{"narne":"notes.txt",${filler},"name":"/etc/shadow"}}`;
    const { gate, started, sink } = gateOver([
      { id: "a1", toolCallId: "c1", toolName: "read_file", arguments: written, decision: "APPROVE" },
      { id: "a2", toolCallId: "c2", toolName: "read_file", arguments: written, decision: "EDIT", editedArguments: '{"file":{"name":"notes.txt"}}' },
    ]);
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool read_file" });
    expect(await gate({ id: "c1", name: "read_file", arguments: written }, span)).toMatchObject({
      type: "decline",
      output: expect.stringContaining("a person cannot be shown what it would run"),
    });
    expect(await gate({ id: "c2", name: "read_file", arguments: written }, span)).toEqual({ type: "execute", arguments: '{"file":{"name":"notes.txt"}}' });
    expect(started).toEqual(["a2"]);
  });
});
