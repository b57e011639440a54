// A step whose call fails outside its tool (a transient database error on its gate's write) ends
// only once every call of it has: a call already running is stopped through its signal, a call
// not begun never begins, and the stopped call's result is not logged (the next attempt repairs it).
import { describe, expect, it } from "vitest";
import type { ToolApprovalRecord } from "../../src/domain/runs/tool-approval-service.js";
import type { Transact } from "../../src/domain/transaction.js";
import { approvalGate } from "../../src/runtime/tools/approval-gate.js";
import { executeToolCalls } from "../../src/runtime/tools/execute-tool-calls.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { InMemoryTraceSink } from "../support/in-memory-trace-sink.js";
import { testRun } from "../support/tool-context.js";

const approved = (id: string, toolCallId: string) =>
  ({
    id,
    messageId: "m1",
    toolCallId,
    toolName: "deploy",
    arguments: '{"t":1}',
    decision: "APPROVE",
    startedAt: null,
    reason: null,
    decidedBy: "owner",
    mcpTool: null,
    mcpToolDigest: null,
  }) as unknown as ToolApprovalRecord;

describe("a step whose call's gate fails", () => {
  it("stops the approved call already running and returns only once it stopped; a queued call never begins", async () => {
    const sink = new InMemoryTraceSink();
    const parent = await sink.startSpan({ traceId: "run-1", kind: "TURN", name: "turn 1" });
    const log: string[] = [];
    const deploy: Tool = {
      schema: { name: "deploy", description: "deploys", parameters: { type: "object" } },
      execute: (_args, { toolCallId, signal }) =>
        new Promise((resolve, reject) => {
          log.push(`${toolCallId} started`);
          const timer = setTimeout(() => {
            log.push(`${toolCallId} finished`);
            resolve("deployed");
          }, 3_000);
          signal.addEventListener("abort", () => {
            clearTimeout(timer);
            log.push(`${toolCallId} stopped`);
            reject(new Error("stopped"));
          });
        }),
    };
    const write: Transact = (work) => work({} as never, []);
    const gate = approvalGate({
      approvals: {
        request: () => Promise.reject(new Error("no call here needs a new request")),
        markStarted: async (_tx, id) => {
          if (id === "a2") {
            await new Promise((resolve) => setTimeout(resolve, 50));
            throw Object.assign(new Error("connection reset"), { code: "P1017" });
          }
          log.push(`${id} marked started`);
        },
      },
      needsApproval: () => true,
      inputSchemaOf: () => null,
      mcpToolOf: () => null,
      existing: [approved("a1", "c1"), approved("a2", "c2"), approved("a3", "c3")],
      runId: "run-1",
      messageId: "m1",
      write,
      sink,
      timeoutMs: 60_000,
      now: () => new Date(),
    });
    const outcome = await executeToolCalls({
      calls: ["c1", "c2", "c3"].map((id) => ({ id, name: "deploy", arguments: '{"t":1}' })),
      tools: new Map([["deploy", deploy]]),
      sink,
      write,
      parent,
      run: testRun(),
      signal: new AbortController().signal,
      defaultTimeoutMs: 10_000,
      limits: { maxPerReply: 64, maxConcurrency: 2 },
      gate,
      logResult: async ({ call }) => {
        log.push(`${call.id} logged`);
        return `entry-${call.id}`;
      },
    }).then(
      () => "resolved",
      (error: Error) => `rejected: ${error.message}`,
    );
    log.push(`step ${outcome}`);
    expect(log).toEqual(["a1 marked started", "c1 started", "c1 stopped", "step rejected: connection reset"]);
    // The stopped call's span says it was interrupted; the failed gate's says it failed.
    const calls = sink.spans.filter((span) => span.kind === "TOOL_CALL");
    expect(calls.map((span) => [span.attributes["gen_ai.tool.call.id"], span.status])).toEqual([
      ["c1", "INTERRUPTED"],
      ["c2", "ERROR"],
    ]);
  });
});
