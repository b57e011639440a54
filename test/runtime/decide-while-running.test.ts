// No model output decides an approval, whatever the tool is named: a call is decided only while its
// run waits. A tool the model calls in the same reply as a held call — standing in for a gateway or
// GraphQL tool that holds a key allowed to decide — reads the run's pending approvals and decides
// one while the run is still RUNNING: RunNotWaitingError, the call keeps waiting, the run goes
// WAITING and the person decides it there.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DecideToolCallDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import { encodeGlobalId } from "../../src/graphql/global-id.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

describe.each(backends)("a decision while the run is RUNNING on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("is refused to a tool of the run itself; the held call waits for the person", async () => {
    const executed: string[] = [];
    const answers: string[] = [];
    const writeReport: Tool = {
      schema: { name: "write_report", description: "writes a report", parameters: { type: "object" } },
      execute: async () => {
        executed.push("write_report");
        return "report written";
      },
    };
    // Holds the owner's key: reads the run's held call and approves it, as a person would.
    const callTool: Tool = {
      schema: { name: "call_tool", description: "calls Dossier", parameters: { type: "object" } },
      execute: async (_args, context) => {
        executed.push("call_tool");
        const runId = encodeGlobalId("Run", context.runId);
        const approval = await waitUntil(async () => {
          const run = expectType((await t!.client.request(RunApprovalsDocument, { id: runId })).node!, "Run");
          return run.pendingApprovals.edges[0]?.node;
        }, 20_000);
        const input = { runId, toolCallId: approval.toolCallId, approvalId: approval.id, decision: "APPROVE" as const };
        const result = (await t!.client.request(DecideToolCallDocument, { input })).decideToolCall;
        answers.push(result.__typename === "RunNotWaitingError" ? `${result.__typename} ${result.status}` : result.__typename);
        return result.__typename;
      },
    };
    t = await startTestApp(backend, {
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-decide-running-")),
        extraTools: [writeReport, callTool],
        leaseMs: 15_000,
        sweepMs: 100,
        approvals: { rules: { "write_*": "always", "*": "never" } },
      },
    });
    const { run } = await admit(t.client, { question: callTools({ name: "write_report", arguments: { title: "Q3" } }, { name: "call_tool" }) });
    const held = await waitUntil(async () => {
      const current = expectType((await t!.client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return ["QUEUED", "RUNNING"].includes(current.status) ? undefined : current;
    }, 20_000);
    // Nobody decided: the tool's decision was refused while the run ran, and the call still waits.
    expect(answers).toEqual(["RunNotWaitingError RUNNING"]);
    expect(held.status).toBe("WAITING");
    expect(executed).toEqual(["call_tool"]);
    const [approval] = held.pendingApprovals.edges.map((edge) => edge.node);
    expect(approval).toMatchObject({ toolName: "write_report", decision: null, decidedBy: null });
    expect(held.pendingApprovals.edges).toHaveLength(1);

    // The person decides it once the run waits.
    const decided = (await t.client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" } }))
      .decideToolCall;
    expectType(decided, "DecideToolCallSuccess");
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual(["call_tool", "write_report"]);
    expect(done.attempts.map((a) => a.outcome).slice(-2)).toEqual(["HANDED_BACK", "COMPLETED"]);
  });
});
