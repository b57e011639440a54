// The gate each tool call passes before it executes, over an in-memory store and trace: a held
// call gets one request and an APPROVAL_REQUESTED event and waits; a decided one executes (marked
// begun first) or is declined with the reason; anything else executes at once.
import { describe, expect, it } from "vitest";
import type { ToolApprovalRecord } from "../../src/domain/runs/tool-approval-service.js";
import type { Transact } from "../../src/domain/transaction.js";
import {
  approvalGate,
  changedToolResult,
  declinedResult,
  notDecidedCallResult,
  repeatedKeyResult,
  unreadableArgumentsResult,
  unreadableKeyResult,
} from "../../src/runtime/tools/approval-gate.js";
import { InMemoryTraceSink } from "../support/in-memory-trace-sink.js";

const call = (id: string, name = "deploy") => ({ id, name, arguments: '{"target":"prod"}' });

function gateOver(existing: Partial<ToolApprovalRecord>[] = [], mcpTools: Record<string, string> = {}, current?: (name: string) => Promise<string | null>) {
  const requests: unknown[] = [];
  const started: string[] = [];
  const sink = new InMemoryTraceSink();
  const write: Transact = (work) => work({} as never, []);
  const gate = approvalGate({
    approvals: {
      request: async (_tx, approval) => {
        requests.push(approval);
        return { id: `approval-${requests.length}`, ...approval } as ToolApprovalRecord;
      },
      markStarted: async (_tx, id) => void started.push(id),
    },
    needsApproval: (name) => name === "deploy",
    inputSchemaOf: (name) => (name === "deploy" ? { type: "object", properties: { target: { type: "string" } } } : null),
    mcpToolOf: (name) => mcpTools[name] ?? null,
    ...(current && { current }),
    existing: existing.map(
      (a) =>
        ({ messageId: "m1", toolName: "deploy", arguments: call("").arguments, startedAt: null, reason: null, decidedBy: null, ...a }) as ToolApprovalRecord,
    ),
    runId: "run-1",
    messageId: "m1",
    write,
    sink,
    timeoutMs: 60_000,
    now: () => new Date("2026-12-02T12:00:00Z"),
  });
  return { gate, requests, started, sink };
}

describe("the approval gate", () => {
  it("holds a call the policy names: one request, an APPROVAL_REQUESTED event, no execution", async () => {
    const { gate, requests, sink } = gateOver();
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool deploy" });
    expect(await gate(call("c1"), span)).toEqual({ type: "pending" });
    expect(requests).toEqual([expect.objectContaining({ toolCallId: "c1", toolName: "deploy", messageId: "m1", expiresAt: new Date("2026-12-02T12:01:00Z") })]);
    expect(sink.spans[0]!.events.map((e) => e.kind)).toEqual(["APPROVAL_REQUESTED"]);
    // A second call with the same id in the same message (a log older than unique ids) never runs.
    expect(await gate(call("c1"), span)).toMatchObject({ type: "decline" });
    expect(requests).toHaveLength(1);
    expect(await gate(call("c2", "read"), span)).toEqual({ type: "execute" });
  });

  it("never puts to a person a call whose arguments repeat a key: the tool would run the last value, the person may read the first", async () => {
    const { gate, requests, started, sink } = gateOver([{ id: "a1", toolCallId: "old", decision: "APPROVE" }]);
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool deploy" });
    // The repeated key far from the first: a page showing the first lines shows "staging".
    const padded = `{"target":"staging",${Array.from({ length: 500 }, (_, i) => `"p${i}":"x"`).join(",")},"target":"prod"}`;
    const nested = { id: "c1", name: "deploy", arguments: '{"target":"staging","options":{"force":false,"\\u0066orce":true}}' };
    expect(await gate(nested, span)).toEqual({ type: "decline", output: repeatedKeyResult(nested, "force") });
    expect(await gate({ id: "c2", name: "deploy", arguments: padded }, span)).toEqual({ type: "decline", output: repeatedKeyResult(nested, "target") });
    expect(repeatedKeyResult(nested, "force")).toContain('give the key "force" more than once');
    // Nothing was recorded for a person, and a call the policy does not hold runs as JSON.parse reads it.
    expect(requests).toEqual([]);
    expect(await gate({ id: "c3", name: "read", arguments: '{"a":1,"a":2}' }, span)).toEqual({ type: "execute" });
    // A request approved before this rule, for arguments that repeat a key, does not run either.
    expect(await gate({ id: "old", name: "deploy", arguments: '{"target":"staging","target":"prod"}' }, span)).toMatchObject({ type: "decline" });
    expect(started).toEqual([]);
    // The same key in different objects, or as a value, is no repetition.
    expect(await gate({ id: "c4", name: "deploy", arguments: '{"target":"prod","options":{"target":"target"},"list":[{"a":1},{"a":2}]}' }, span)).toEqual({
      type: "pending",
    });
  });

  it("never puts to a person a call with a key that reads as another: a look-alike decoy far before the real key does not run", async () => {
    const { gate, requests, started, sink } = gateOver([{ id: "a1", toolCallId: "old", decision: "APPROVE" }]);
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool deploy" });
    const padding = Array.from({ length: 300 }, (_, i) => `"p${i}":"x"`).join(",");
    const cases = [
      ['{"targ\u0435t":"staging",PAD,"target":"prod"}', { kind: "mixedScripts", key: "targ\u0435t" }],
      ['{"tar\u2065get":"staging",PAD,"target":"prod"}', { kind: "hidden", key: "tar\u2065get" }],
      ['{"target":"prod","labels":{"\u0422\u0410\u0420\u0415":"a",PAD,"tape":"b"}}', { kind: "lookAlike", key: "tape", like: "\u0422\u0410\u0420\u0415" }],
      ['{"\u0446\u0435\u043B\u044C":"prod"}', { kind: "undeclared", key: "\u0446\u0435\u043B\u044C" }],
      ['{"Target":"staging",PAD,"target":"prod"}', { kind: "likeDeclared", key: "Target", like: "target" }],
    ] as const;
    for (const [i, [written, problem]] of cases.entries()) {
      const held = { id: `k${i}`, name: "deploy", arguments: written.replace("PAD", padding) };
      expect(await gate(held, span)).toEqual({ type: "decline", output: unreadableKeyResult(held, problem) });
    }
    expect(unreadableKeyResult({ name: "deploy" }, cases[1][1])).toContain('the key "tar\\u2065get", which holds a character a person does not see');
    expect(unreadableKeyResult({ name: "deploy" }, cases[4][1])).toContain(
      'the key "Target", which is not one of the properties the tool declares but reads like its property "target"',
    );
    expect(requests).toEqual([]);
    // A request approved before this rule, for such arguments, does not run either.
    expect(await gate({ id: "old", name: "deploy", arguments: '{"targ\u0435t":"staging","target":"prod"}' }, span)).toMatchObject({ type: "decline" });
    expect(started).toEqual([]);
    // Non-ASCII keys the tool does not declare are fine below its declared properties, and values are never keys.
    expect(await gate({ id: "ok", name: "deploy", arguments: '{"target":"t\u0430rg\u2065et","labels":{"\u0446\u0435\u043B\u044C":"x"}}' }, span)).toEqual({
      type: "pending",
    });
  });

  it("never puts to a person a call whose arguments are not JSON, or hold a number that would run as another value", async () => {
    const { gate, requests, sink } = gateOver();
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool deploy" });
    const cut = { id: "c1", name: "deploy", arguments: '{"target":"prod","replicas":' };
    expect(await gate(cut, span)).toEqual({ type: "decline", output: unreadableArgumentsResult(cut, { notJson: true }) });
    expect(unreadableArgumentsResult(cut, { notJson: true })).toContain("are not valid JSON");
    for (const [written, number] of [
      ['{"amount":9007199254740993}', "9007199254740993"],
      // Its shortest form is 1e+23, yet the double is 99999999999999991611392.
      ['{"amount":100000000000000000000000}', "100000000000000000000000"],
      ['{"amount":-123456789012345678901234567890}', "-123456789012345678901234567890"],
      ['{"target":"prod","limits":[1,2,{"max":1e400}]}', "1e400"],
      ['{"rate":-1e-400}', "-1e-400"],
      ['{"amount":9007199254740993.0}', "9007199254740993.0"],
      ['{"amount":9007199254740993e0}', "9007199254740993e0"],
      ['{"ratio":1.00000000000000000001}', "1.00000000000000000001"],
      [`{"tiny":0.${"0".repeat(450)}1}`, `0.${"0".repeat(38)}…`],
    ] as const) {
      const held = { id: `n-${number}`, name: "deploy", arguments: written };
      expect(await gate(held, span)).toEqual({ type: "decline", output: unreadableArgumentsResult(held, { number }) });
    }
    expect(requests).toEqual([]);
    // Numbers that read as written, numbers inside strings, and no arguments at all are put to a person.
    for (const [i, written] of [
      '{"amount":9007199254740992,"rate":0.1,"big":1e300,"hundred":1E2,"half":-0.50,"zero":0.0,"s":"9007199254740993 1e400"}',
      "",
      "{}",
    ].entries()) {
      expect(await gate({ id: `ok-${i}`, name: "deploy", arguments: written }, span)).toEqual({ type: "pending" });
    }
    expect(requests).toHaveLength(3);
  });

  it("follows a decision: APPROVE marks the call begun and executes it, REJECT declines it with the reason, none keeps it waiting", async () => {
    const { gate, requests, started, sink } = gateOver([
      { id: "a1", toolCallId: "c1", decision: "APPROVE" },
      { id: "a2", toolCallId: "c2", decision: "REJECT", reason: "not today" },
      { id: "a3", toolCallId: "c3", decision: null },
      { id: "a4", toolCallId: "c4", decision: "APPROVE", messageId: "an earlier message" },
    ]);
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool deploy" });
    expect(await gate(call("c1"), span)).toEqual({ type: "execute" });
    expect(started).toEqual(["a1"]);
    expect(await gate(call("c2"), span)).toEqual({ type: "decline", output: declinedResult({ name: "deploy" }, "not today") });
    expect(declinedResult({ name: "deploy" }, "not today")).toContain('declined this call of "deploy". Reason: not today.');
    expect(await gate(call("c3"), span)).toEqual({ type: "pending" });
    // A reused id of an earlier message reads no decision of that message's call: it asks anew.
    expect(await gate(call("c4"), span)).toEqual({ type: "pending" });
    expect(requests).toHaveLength(1);
  });

  it("runs an approved call only while its name means the MCP tool the request recorded", async () => {
    const tools = { mcp__fs__delete_cache: "fs/delete_cache", deploy: "ops/deploy" };
    const { gate, requests, started, sink } = gateOver(
      [
        { id: "a1", toolCallId: "c1", toolName: "mcp__fs__delete_cache", decision: "APPROVE", mcpTool: "fs/delete.cache" },
        { id: "a2", toolCallId: "c2", toolName: "mcp__fs__delete_cache", decision: "EDIT", editedArguments: "{}", mcpTool: "fs/delete.cache" },
        { id: "a3", toolCallId: "c3", toolName: "mcp__fs__delete_cache", decision: "APPROVE", mcpTool: "fs/delete_cache" },
      ],
      tools,
    );
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool mcp__fs__delete_cache" });
    const changed = { type: "decline", output: changedToolResult({ name: "mcp__fs__delete_cache" }, "fs/delete.cache", "fs/delete_cache") };
    expect(await gate(call("c1", "mcp__fs__delete_cache"), span)).toEqual(changed);
    expect(await gate(call("c2", "mcp__fs__delete_cache"), span)).toEqual(changed);
    expect(await gate(call("c3", "mcp__fs__delete_cache"), span)).toEqual({ type: "execute" });
    expect(started).toEqual(["a3"]);
    // A new request records which tool it is for.
    await gate(call("c4"), span);
    expect(requests).toEqual([expect.objectContaining({ toolCallId: "c4", mcpTool: "ops/deploy" })]);
  });

  it("runs no approved or edited call of a server removed or turned off since; a declined one stays declined", async () => {
    const asked: string[] = [];
    const gone = (name: string) => `[not executed: the MCP server "ops" of "${name}" was removed or turned off after this run started.]`;
    const { gate, started, sink } = gateOver(
      [
        { id: "a1", toolCallId: "c1", decision: "APPROVE" },
        { id: "a2", toolCallId: "c2", decision: "EDIT", editedArguments: '{"target":"staging"}' },
        { id: "a3", toolCallId: "c3", decision: "REJECT", reason: "no" },
        { id: "a4", toolCallId: "c4", toolName: "read", decision: "APPROVE" },
      ],
      {},
      async (name) => (asked.push(name), name === "deploy" ? gone(name) : null),
    );
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool deploy" });
    expect(await gate(call("c1"), span)).toEqual({ type: "decline", output: gone("deploy") });
    expect(await gate(call("c2"), span)).toEqual({ type: "decline", output: gone("deploy") });
    expect(await gate(call("c3"), span)).toEqual({ type: "decline", output: declinedResult({ name: "deploy" }, "no") });
    expect(await gate(call("c4", "read"), span)).toEqual({ type: "execute" });
    expect(started).toEqual(["a4"]);
    expect(asked).toEqual(["deploy", "deploy", "read"]);
  });

  it("runs an edited call with the person's arguments, however unreadable the model's original keys were", async () => {
    const original = '{"Target":"prod","targ\u0435t":"x","target":"staging"}';
    const { gate, started, sink } = gateOver([
      { id: "a1", toolCallId: "c1", decision: "EDIT", editedArguments: '{"target":"staging"}', arguments: original },
      { id: "a2", toolCallId: "c2", decision: "APPROVE", arguments: original },
    ]);
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool deploy" });
    expect(await gate({ id: "c1", name: "deploy", arguments: original }, span)).toEqual({ type: "execute", arguments: '{"target":"staging"}' });
    // The same arguments approved as they are do not run.
    expect(await gate({ id: "c2", name: "deploy", arguments: original }, span)).toMatchObject({ type: "decline" });
    expect(started).toEqual(["a1"]);
  });

  it("runs one call per decision, the one the person was shown: a call with its id and other arguments or tool is declined", async () => {
    // A log written before ids were made unique: two calls c1 of one message, one request, approved as shown.
    const staging = { id: "c1", name: "deploy", arguments: '{"t":"staging"}' };
    const { gate, started, sink } = gateOver([
      { id: "a1", toolCallId: "c1", decision: "APPROVE", arguments: staging.arguments },
      { id: "a2", toolCallId: "c2", decision: "EDIT", arguments: staging.arguments, editedArguments: '{"t":"qa"}' },
    ]);
    const span = await sink.startSpan({ traceId: "run-1", kind: "TOOL_CALL", name: "execute_tool deploy" });
    const production = { id: "c1", name: "deploy", arguments: '{"t":"production"}' };
    const notDecided = { type: "decline", output: expect.stringContaining("nobody decided on it") };
    expect(await gate(production, span)).toEqual(notDecided);
    expect(await gate({ ...staging, name: "delete_all" }, span)).toEqual(notDecided);
    expect(await gate(staging, span)).toEqual({ type: "execute" });
    // The same call again: one execution per decision.
    expect(await gate(staging, span)).toMatchObject({ type: "decline" });
    // An edit runs the person's arguments for the call they were shown, and for no other.
    expect(await gate({ ...production, id: "c2" }, span)).toMatchObject({ type: "decline" });
    expect(await gate({ ...staging, id: "c2" }, span)).toEqual({ type: "execute", arguments: '{"t":"qa"}' });
    expect(await gate({ ...staging, id: "c2" }, span)).toMatchObject({ type: "decline" });
    expect(started).toEqual(["a1", "a2"]);
    expect(notDecidedCallResult(production)).toContain('has the id "c1" of a call a person decided on');
  });
});
