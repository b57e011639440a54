// Human approval of tool calls, in one instance on every backend: a call the rules hold waits for
// its run's owner while the other calls of its step run at once; the run waits WAITING with no
// lease, and resumes once decided — the approved call executes, a rejected one is answered with
// the person's reason. One decision counts; another principal's is NotFound; a cancellation,
// an expiry and the deadline all end the wait.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { CancelRunDocument, DecideToolCallDocument, RunApprovalsDocument } from "../../sdk/generated/graphql.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

/** A tool that records each execution. */
function recordingTool(name: string, executed: string[]): Tool {
  return {
    schema: { name, description: `${name} something`, parameters: { type: "object" } },
    execute: async (args) => {
      executed.push(name);
      return `${name} done with ${JSON.stringify(args)}`;
    },
  };
}

/** The run once it is WAITING, with its pending approvals. */
function waiting(client: DossierClient, runId: string) {
  return waitUntil(async () => {
    const run = expectType((await client.request(RunApprovalsDocument, { id: runId })).node!, "Run");
    return run.status === "WAITING" ? run : undefined;
  }, 20_000);
}

function decide(client: DossierClient, input: { runId: string; toolCallId: string; decision: "APPROVE" | "REJECT"; reason?: string }) {
  return client.request(DecideToolCallDocument, { input }).then((result) => result.decideToolCall);
}

describe.each(backends)("tool approvals on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const executed: string[] = [];
  let clock = Date.now();

  async function start(options: { authRequired?: boolean; timeoutSeconds?: number } = {}) {
    executed.length = 0;
    clock = Date.now();
    t = await startTestApp(backend, {
      authRequired: options.authRequired,
      agents: [{ name: "careful", systemPrompt: "Ask before reading notes.", toolApprovals: { read_notes: "always" } }],
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-approvals-")),
        extraTools: [recordingTool("write_report", executed), recordingTool("read_notes", executed)],
        leaseMs: 1_500,
        sweepMs: 100,
        approvals: { rules: { "write_*": "always", "*": "never" }, timeoutSeconds: options.timeoutSeconds, now: () => new Date(clock) },
      },
    });
    return t;
  }

  it("an approved call waits for the decision, then executes; the other call of its step ran at once", async () => {
    const t = await start();
    const { run } = await admit(t.client, { question: callTools({ name: "write_report", arguments: { title: "Q3" } }, { name: "read_notes" }) });
    const held = await waiting(t.client, run.id);
    expect(held.pendingApprovals).toHaveLength(1);
    const [approval] = held.pendingApprovals;
    expect(approval).toMatchObject({ toolName: "write_report", arguments: '{"title":"Q3"}', decision: null, decidedBy: null });
    expect(executed).toEqual(["read_notes"]);

    const decided = expectType(await decide(t.client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" }), "DecideToolCallSuccess");
    expect(decided.approval.decision).toBe("APPROVE");
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual(["read_notes", "write_report"]);
    expect(done.answer).toContain('write_report done with {"title":"Q3"}');
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
    const events = done.trace!.spans.flatMap((s) => s.events.map((e) => e.kind));
    expect(events).toContain("APPROVAL_REQUESTED");
    expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
    expect(done.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT", "TOOL", "TOOL", "ASSISTANT"]);

    // A second decision is refused: the first stands.
    const again = expectType(await decide(t.client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "REJECT" }), "AlreadyDecidedError");
    expect(again.approval.decision).toBe("APPROVE");
  });

  it("an agent profile's own rules hold calls the operator's rules let through", async () => {
    const t = await start();
    const { run } = await admit(t.client, { agent: "careful", question: callTools({ name: "read_notes" }) });
    const [approval] = (await waiting(t.client, run.id)).pendingApprovals;
    expect(approval!.toolName).toBe("read_notes");
    expect(executed).toEqual([]);
    const { run: plain } = await admit(t.client, { question: callTools({ name: "read_notes" }) });
    expect((await settled(t.client, plain.id)).status).toBe("SUCCEEDED");
    expect(executed).toEqual(["read_notes"]);
  });

  it("a rejected call does not execute: the model reads that the person declined it, and why", async () => {
    const t = await start();
    const { run } = await admit(t.client, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(t.client, run.id)).pendingApprovals;
    expectType(
      await decide(t.client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "REJECT", reason: "not this quarter" }),
      "DecideToolCallSuccess",
    );
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual([]);
    expect(done.answer).toMatch(/declined this call of "write_report"\. Reason: not this quarter\./);
  });

  it("of concurrent decisions on one call exactly one wins; the others are AlreadyDecidedError", async () => {
    const t = await start();
    const { run } = await admit(t.client, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(t.client, run.id)).pendingApprovals;
    const decisions = ["APPROVE", "REJECT", "APPROVE", "REJECT", "APPROVE", "REJECT"] as const;
    const results = await Promise.all(decisions.map((decision) => decide(t.client, { runId: run.id, toolCallId: approval!.toolCallId, decision })));
    const winners = results.filter((result) => result.__typename === "DecideToolCallSuccess");
    expect(winners).toHaveLength(1);
    expect(results.filter((result) => result.__typename === "AlreadyDecidedError")).toHaveLength(decisions.length - 1);
    const won = expectType(winners[0]!, "DecideToolCallSuccess").approval.decision;
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual(won === "APPROVE" ? ["write_report"] : []);
  });

  it("two calls of one step decided at the same moment: the run resumes once, with both decisions", async () => {
    const t = await start();
    const { run } = await admit(t.client, {
      question: callTools({ name: "write_report", arguments: { n: 1 } }, { name: "write_report", arguments: { n: 2 } }),
    });
    const pending = (await waiting(t.client, run.id)).pendingApprovals;
    expect(pending).toHaveLength(2);
    const results = await Promise.all(
      pending.map((approval, i) =>
        decide(t.client, { runId: run.id, toolCallId: approval.toolCallId, decision: i === 0 ? "APPROVE" : "REJECT", reason: "one is enough" }),
      ),
    );
    expect(results.map((result) => result.__typename)).toEqual(["DecideToolCallSuccess", "DecideToolCallSuccess"]);
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual(["write_report"]);
    expect(done.answer).toContain('write_report done with {"n":1}');
    expect(done.answer).toMatch(/Reason: one is enough\./);
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
  });

  it("another principal's decision is NotFound and changes nothing", async () => {
    const t = await start({ authRequired: true });
    const owner = t.as(await t.createPrincipal("owner"));
    const stranger = t.as(await t.createPrincipal("stranger"));
    const { run } = await admit(owner, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(owner, run.id)).pendingApprovals;
    expectType(await decide(stranger, { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" }), "NotFoundError");
    expect((await waiting(owner, run.id)).pendingApprovals).toHaveLength(1);
    expect(executed).toEqual([]);
  });

  it("cancelling a waiting run ends it at once and rejects its waiting calls", async () => {
    const t = await start();
    const { run } = await admit(t.client, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(t.client, run.id)).pendingApprovals;
    const cancelled = await t.client.request(CancelRunDocument, { input: { runId: run.id } });
    expect(expectType(cancelled.cancelRun, "CancelRunSuccess").run.status).toBe("CANCELLED");
    const late = expectType(await decide(t.client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" }), "AlreadyDecidedError");
    expect(late.approval).toMatchObject({ decision: "REJECT", reason: "the run was cancelled" });
    const done = await settled(t.client, run.id);
    expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
    expect(executed).toEqual([]);
    // The conversation is free: its next run starts.
    const { run: next } = await admit(t.client, { conversationId: run.conversation.id, question: callTools({ name: "read_notes" }) });
    expect((await settled(t.client, next.id)).status).toBe("SUCCEEDED");
  });

  it("a request nobody decides in time counts as rejected: no decision in time", async () => {
    const t = await start({ timeoutSeconds: 60 });
    const { run } = await admit(t.client, { question: callTools({ name: "write_report" }) });
    await waiting(t.client, run.id);
    clock += 61_000;
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toMatch(/Reason: no decision in time\./);
    expect(executed).toEqual([]);
  });

  it("the deadline still applies while the run waits", async () => {
    const t = await start();
    const { run } = await admit(t.client, { question: callTools({ name: "write_report" }), limits: { deadlineSeconds: 120 } });
    await waiting(t.client, run.id);
    // The deadline was set by the real clock at admission; the sweep reads the moved one.
    clock = Date.now() + 125_000;
    const done = await settled(t.client, run.id);
    expect(done.status).toBe("TIMED_OUT");
    expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
    expect(executed).toEqual([]);
  });
});
