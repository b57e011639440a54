// A person's decision names a tool call by its id (decideToolCall). Ids are unique within a run:
// a model that repeats, in a later message, an id the run already used gets Dossier's own for the
// new call — in the log, the trace and the approval request, and in what the model is shown next
// — so a decision made on the earlier call (a stale page, a second client) never decides it.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DecideToolCallDocument, type DecideToolCallInput, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import type { ChatMessage } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { OWN_CALL_ID_PREFIX } from "../../src/runtime/loop/call-ids.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { callToolsInTurns, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

function transferTool(executed: unknown[]): Tool {
  return {
    schema: { name: "write_transfer", description: "transfers money", parameters: { type: "object" } },
    execute: async (args) => {
      executed.push(args);
      return `transferred ${JSON.stringify(args)}`;
    },
  };
}

describe.each(backends)("a decision made on a call whose id the model reuses later, on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  /** A run whose model asks call_1 = transfer(10), then, once that is decided, call_1 = transfer(10000). */
  async function reusingRun() {
    const executed: unknown[] = [];
    const model = toolCallingModel();
    // Every request the model is sent, to check which ids it is shown.
    const requests: ChatMessage[][] = [];
    const complete = model.complete.bind(model);
    model.complete = (request, onEvent) => (requests.push(request.messages), complete(request, onEvent));
    t = await startTestApp(backend, {
      runtime: {
        model,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-stale-decisions-")),
        extraTools: [transferTool(executed)],
        approvals: { rules: { "write_*": "always", "*": "never" } },
      },
    });
    const client = t.client;
    const { run } = await admit(client, {
      question: callToolsInTurns(
        [{ name: "write_transfer", arguments: { amount: 10 }, id: "call_1" }],
        [{ name: "write_transfer", arguments: { amount: 10000 }, id: "call_1" }],
      ),
    });
    const waitingOn = (amount: number) =>
      waitUntil(async () => {
        const view = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
        const pending = view.pendingApprovals.edges.map((edge) => edge.node);
        return view.status === "WAITING" && pending.length === 1 && pending[0]!.arguments === `{"amount":${amount}}` ? pending[0]! : undefined;
      }, 20_000);
    const decide = (input: Omit<DecideToolCallInput, "runId">) => client.request(DecideToolCallDocument, { input: { runId: run.id, ...input } });
    return { executed, requests, client, run, waitingOn, decide };
  }

  it("does not decide the later call: it is refused as already decided, and the later call never runs on it", { timeout: 90_000 }, async () => {
    const { executed, requests, client, run, waitingOn } = await reusingRun();

    // A person's page shows call_1 = transfer(10); another client rejects it and the run goes on.
    const first = await waitingOn(10);
    expect(first.toolCallId).toBe("call_1");
    const rejected = await client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: "call_1", decision: "REJECT", reason: "not now" } });
    expectType(rejected.decideToolCall, "DecideToolCallSuccess");

    // The model asks call_1 = transfer(10000), and the page's stale approval of call_1 comes in.
    const second = await waitingOn(10000);
    const stale = await client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: "call_1", decision: "APPROVE" } });
    const staleRefused = stale.decideToolCall.__typename !== "DecideToolCallSuccess";
    const still = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
    // The new call is decided by its own id (unless the stale decision took it).
    const declined = staleRefused
      ? await client.request(DecideToolCallDocument, { input: { runId: run.id, toolCallId: second.toolCallId, decision: "REJECT", reason: "too much" } })
      : null;
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    // transfer(10000) never ran, nor did transfer(10).
    expect(executed).toEqual([]);

    // The stale approval was refused: call_1 was decided, and that decision stands. The new request
    // has an id of Dossier's own, and it alone waited until it was decided by that id.
    const refused = expectType(stale.decideToolCall, "AlreadyDecidedError");
    expect([refused.approval.id, refused.approval.decision, refused.approval.arguments]).toEqual([first.id, "REJECT", '{"amount":10}']);
    expect(second.toolCallId).not.toBe("call_1");
    expect(second.toolCallId.startsWith(OWN_CALL_ID_PREFIX)).toBe(true);
    expect(still.status).toBe("WAITING");
    expect(still.pendingApprovals.edges.map((edge) => edge.node.id)).toEqual([second.id]);
    expect(declined?.decideToolCall.__typename).toBe("DecideToolCallSuccess");

    // The model was shown the id Dossier recorded, with the call and with its result.
    const last = requests.at(-1)!;
    const calls = last.flatMap((m) => (m.role === "assistant" ? (m.toolCalls ?? []).map((call) => call.id) : []));
    const results = last.flatMap((m) => (m.role === "tool" ? [m.toolCallId] : []));
    expect(calls).toEqual(["call_1", second.toolCallId]);
    expect(results).toEqual(["call_1", second.toolCallId]);
  });

  it("a decision naming the request it was shown (approvalId) decides that one or nothing", { timeout: 90_000 }, async () => {
    const { executed, client, run, waitingOn, decide } = await reusingRun();
    const first = await waitingOn(10);
    expectType((await decide({ toolCallId: "call_1", approvalId: first.id, decision: "REJECT", reason: "not now" })).decideToolCall, "DecideToolCallSuccess");
    const second = await waitingOn(10000);

    // The page that showed transfer(10) approves it again: that request was decided, and it stands.
    const stale = expectType((await decide({ toolCallId: "call_1", approvalId: first.id, decision: "APPROVE" })).decideToolCall, "AlreadyDecidedError");
    expect([stale.approval.id, stale.approval.decision]).toEqual([first.id, "REJECT"]);
    // A request of another call than the one named is not found; an id of another kind is refused.
    expectType((await decide({ toolCallId: second.toolCallId, approvalId: first.id, decision: "APPROVE" })).decideToolCall, "NotFoundError");
    expectType((await decide({ toolCallId: second.toolCallId, approvalId: run.id, decision: "APPROVE" })).decideToolCall, "ValidationError");
    const still = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
    expect([still.status, still.pendingApprovals.edges.map((edge) => edge.node.id)]).toEqual(["WAITING", [second.id]]);
    expect(executed).toEqual([]);

    // Named right, the decision is taken as any: transfer(10000) runs once.
    const approved = expectType(
      (await decide({ toolCallId: second.toolCallId, approvalId: second.id, decision: "APPROVE" })).decideToolCall,
      "DecideToolCallSuccess",
    );
    expect(approved.approval.id).toBe(second.id);
    expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
    expect(executed).toEqual([{ amount: 10000 }]);
  });
});
