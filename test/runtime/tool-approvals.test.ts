// Human approval of tool calls, in one instance on every backend: a call the rules hold waits for
// its run's owner while the other calls of its step run at once; the run waits WAITING with no
// lease, and resumes once decided — the approved call executes, a rejected one is answered with
// the person's reason. One decision counts; another principal's is NotFound; a cancellation,
// an expiry and the deadline all end the wait. Each decision is on the call's span (an
// APPROVAL_DECIDED event) the moment it is made. A waiting run keeps its conversation's slot.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { AdmitRunDocument, CancelRunDocument, DecideToolCallDocument, RunApprovalsDocument, RunEventsDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/graphql/global-id.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { backends } from "../support/databases.js";
import { admit, expectType } from "../support/fixtures.js";
import { callTools, recordedDecisions, settled, toolCallingModel } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

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
  // One app serves the file's tests; each test acts as a principal of its own. A test that needs
  // other settings (an approval timeout) starts its own.
  let shared: TestApp | undefined;
  let own: TestApp | undefined;
  beforeAll(async () => {
    shared = await startApp();
  });
  afterAll(async () => {
    await shared?.close();
    shared = undefined;
  });
  afterEach(async () => {
    await own?.close();
    own = undefined;
  });

  const executed: string[] = [];
  let clock = Date.now();
  beforeEach(() => {
    executed.length = 0;
    clock = Date.now();
  });

  let release: () => void = () => undefined;
  const slow: Tool = {
    schema: { name: "slow_read", description: "reads slowly", parameters: { type: "object" } },
    execute: () => new Promise((resolve) => (release = () => resolve("slow result"))),
  };
  const endless: Tool = {
    schema: { name: "endless_read", description: "reads until stopped", parameters: { type: "object" } },
    execute: (_args, { signal }) => new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("stopped")))),
  };

  function startApp(timeoutSeconds?: number) {
    return startTestApp(backend, {
      listen: true,
      now: () => new Date(clock),
      agents: [{ name: "careful", systemPrompt: "Ask before reading notes.", toolApprovals: { read_notes: "always" } }],
      runtime: {
        model: toolCallingModel(),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-approvals-")),
        extraTools: [recordingTool("write_report", executed), recordingTool("read_notes", executed), slow, endless],
        leaseMs: 1_500,
        sweepMs: 100,
        approvals: { rules: { "write_*": "always", "*": "never" }, timeoutSeconds, now: () => new Date(clock) },
      },
    });
  }

  /** The app and a principal of this test's own (its key, and a client acting as it). */
  async function start(options: { timeoutSeconds?: number } = {}) {
    if (options.timeoutSeconds !== undefined) own = await startApp(options.timeoutSeconds);
    const t = own ?? shared!;
    const key = await t.createPrincipal("owner");
    return { t, key, client: t.as(key) };
  }

  it("an approved call waits for the decision, then executes; the other call of its step ran at once", async () => {
    const { client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "write_report", arguments: { title: "Q3" } }, { name: "read_notes" }) });
    const held = await waiting(client, run.id);
    expect(held.pendingApprovals.edges.map((edge) => edge.node)).toHaveLength(1);
    const [approval] = held.pendingApprovals.edges.map((edge) => edge.node);
    expect(approval).toMatchObject({ toolName: "write_report", arguments: '{"title":"Q3"}', decision: null, decidedBy: null });
    expect(executed).toEqual(["read_notes"]);

    const decided = expectType(await decide(client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" }), "DecideToolCallSuccess");
    expect(decided.approval.decision).toBe("APPROVE");
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual(["read_notes", "write_report"]);
    expect(done.answer).toContain('write_report done with {"title":"Q3"}');
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
    const events = done.trace!.spans.flatMap((s) => s.events.map((e) => e.kind));
    expect(events).toContain("APPROVAL_REQUESTED");
    expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
    expect(done.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT", "TOOL", "TOOL", "ASSISTANT"]);

    // A second decision is refused: the first stands.
    const again = expectType(await decide(client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "REJECT" }), "AlreadyDecidedError");
    expect(again.approval.decision).toBe("APPROVE");
  });

  it("an agent profile's own rules hold calls the operator's rules let through", async () => {
    const { client } = await start();
    const { run } = await admit(client, { agent: "careful", question: callTools({ name: "read_notes" }) });
    const [approval] = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    expect(approval!.toolName).toBe("read_notes");
    expect(executed).toEqual([]);
    const { run: plain } = await admit(client, { question: callTools({ name: "read_notes" }) });
    expect((await settled(client, plain.id)).status).toBe("SUCCEEDED");
    expect(executed).toEqual(["read_notes"]);
  });

  it("runEvents shows the run WAITING, and traceUpdates the APPROVAL_REQUESTED event on the call's span", async () => {
    const { t, key } = await start();
    const client = t.connect(key);
    // The worker is held until both subscriptions listen, so they see every change.
    await t.app.runtime!.worker.stop();
    const listening = t.listeners();
    const { run } = await admit(client, { question: callTools({ name: "write_report" }) });
    const statuses = (async () => {
      const seen: string[] = [];
      for await (const event of { [Symbol.asyncIterator]: () => client.subscribe(RunEventsDocument, { runId: run.id }) }) seen.push(event.runEvents.status);
      return seen;
    })();
    const trace = (async () => {
      const seen: { kind: string; span: string | undefined; name: string | undefined; event: string | undefined; preview: string | undefined }[] = [];
      for await (const update of client.traceUpdates(run.id)) {
        seen.push({ kind: update.kind, span: update.span?.kind, name: update.span?.name, event: update.event?.kind, preview: update.event?.preview });
      }
      return seen;
    })();
    await waitUntil(() => (t.listeners() >= listening + 2 ? true : undefined));
    t.app.runtime!.worker.start();
    const [approval] = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    expectType(await decide(client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" }), "DecideToolCallSuccess");
    const seen = await statuses;
    // First the status it has when subscribed, then each change once (the approval and the claim both announce RUNNING).
    expect(seen).toEqual(["QUEUED", "RUNNING", "WAITING", "RUNNING", "SUCCEEDED"]);
    const updates = await trace;
    const requested = updates.find((update) => update.kind === "EVENT_APPENDED" && update.preview?.includes('"toolName":"write_report"'));
    expect(requested).toBeDefined();
    // The decision reached subscribers on the call's span, before the attempt that went on with the run began.
    const decided = updates.findIndex((update) => update.event === "APPROVAL_DECIDED");
    expect(updates[decided]).toMatchObject({ kind: "EVENT_APPENDED", span: "TOOL_CALL" });
    expect(JSON.parse(updates[decided]!.preview!)).toMatchObject({ toolCallId: approval!.toolCallId, decision: "APPROVE", reason: null });
    expect(decided).toBeLessThan(updates.findIndex((update) => update.kind === "SPAN_STARTED" && update.name === "attempt 2"));
    const done = await settled(client, run.id);
    const event = done.trace!.spans.flatMap((s) => s.events.map((e) => ({ span: s.kind, kind: e.kind }))).find((e) => e.kind === "APPROVAL_REQUESTED");
    expect(event).toEqual({ span: "TOOL_CALL", kind: "APPROVAL_REQUESTED" });
  });

  it("a decision sent while the step's other calls still run is refused: the call waits, and is decided once the run does", async () => {
    const { client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "write_report" }, { name: "slow_read" }) });
    const approval = await waitUntil(async () => {
      const current = expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run");
      return current.pendingApprovals.edges.map((edge) => edge.node)[0];
    });
    expect(expectType((await client.request(RunApprovalsDocument, { id: run.id })).node!, "Run").status).toBe("RUNNING");
    const early = expectType(await decide(client, { runId: run.id, toolCallId: approval.toolCallId, decision: "APPROVE" }), "RunNotWaitingError");
    expect(early.status).toBe("RUNNING");
    release();
    const [still] = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    expect(still).toMatchObject({ id: approval.id, decision: null });
    expectType(await decide(client, { runId: run.id, toolCallId: approval.toolCallId, decision: "APPROVE" }), "DecideToolCallSuccess");
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toContain("slow result");
    expect(executed).toEqual(["write_report"]);
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
  });

  it("a rejected call does not execute: the model reads that the person declined it, and why", async () => {
    const { client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    expectType(
      await decide(client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "REJECT", reason: "not this quarter" }),
      "DecideToolCallSuccess",
    );
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual([]);
    expect(done.answer).toMatch(/declined this call of "write_report"\. Reason: not this quarter\./);
  });

  it("the decision is on the call's span the moment it is made: what, by whom and why, once", async () => {
    const { t, client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    // No worker runs: whatever the trace shows now, the decision itself wrote.
    await t.app.runtime!.worker.stop();
    const decided = expectType(
      await decide(client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "REJECT", reason: "too risky" }),
      "DecideToolCallSuccess",
    );
    const now = (await client.runTrace(run.id))!;
    expect(recordedDecisions(now)).toEqual([
      {
        span: "TOOL_CALL",
        seq: expect.any(String),
        approvalId: expect.any(String),
        toolCallId: approval!.toolCallId,
        toolName: "write_report",
        decision: "REJECT",
        decidedBy: idOfType(decided.approval.decidedBy!.id, "Principal"),
        reason: "too risky",
        decidedAt: decided.approval.decidedAt,
      },
    ]);
    const span = now.trace!.spans.find((s) => s.events.some((e) => e.kind === "APPROVAL_DECIDED"))!;
    expect(span.events.map((e) => e.kind)).toEqual(["TOOL_INPUT", "APPROVAL_REQUESTED", "APPROVAL_DECIDED"]);
    t.app.runtime!.worker.start();
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    // The attempt that went on with the run did not record it again.
    expect(recordedDecisions(done)).toEqual(recordedDecisions(now));
  });

  it("a waiting run keeps its conversation's slot: REJECT is refused, ENQUEUE waits for it to end, INTERRUPT cancels it", async () => {
    const { client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    const conversationId = run.conversation.id;
    const busy = await client.request(AdmitRunDocument, { input: { conversationId, question: callTools({ name: "read_notes" }) } });
    expect(expectType(busy.admitRun, "ConversationBusyError").activeRun.id).toBe(run.id);
    const { run: next } = await admit(client, { conversationId, question: callTools({ name: "read_notes" }), multitask: "ENQUEUE" });
    await allowTimeFor("the queued run to start while the first waits (it must not)", 500);
    expect(expectType((await client.request(RunApprovalsDocument, { id: next.id })).node!, "Run").status).toBe("QUEUED");
    expect(executed).toEqual([]);
    expectType(await decide(client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" }), "DecideToolCallSuccess");
    const [first, second] = await Promise.all([settled(client, run.id), settled(client, next.id)]);
    expect([first.status, second.status]).toEqual(["SUCCEEDED", "SUCCEEDED"]);
    // The queued run started only once the waiting one had ended.
    expect(executed).toEqual(["write_report", "read_notes"]);
    expect(Date.parse(second.startedAt!)).toBeGreaterThanOrEqual(Date.parse(first.finishedAt!));

    const { run: third } = await admit(client, { conversationId, question: callTools({ name: "write_report" }) });
    const [held] = (await waiting(client, third.id)).pendingApprovals.edges.map((edge) => edge.node);
    const { run: fourth } = await admit(client, { conversationId, question: callTools({ name: "read_notes" }), multitask: "INTERRUPT" });
    const interrupted = await settled(client, third.id);
    expect(interrupted.status).toBe("CANCELLED");
    expect(recordedDecisions(interrupted)).toMatchObject([{ toolCallId: held!.toolCallId, decision: "REJECT", decidedBy: null }]);
    expect((await settled(client, fourth.id)).status).toBe("SUCCEEDED");
    expect(executed).toEqual(["write_report", "read_notes", "read_notes"]);
  });

  it("of concurrent decisions on one call exactly one wins; the others are AlreadyDecidedError", async () => {
    const { client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    const decisions = ["APPROVE", "REJECT", "APPROVE", "REJECT", "APPROVE", "REJECT"] as const;
    const results = await Promise.all(decisions.map((decision) => decide(client, { runId: run.id, toolCallId: approval!.toolCallId, decision })));
    const winners = results.filter((result) => result.__typename === "DecideToolCallSuccess");
    expect(winners).toHaveLength(1);
    expect(results.filter((result) => result.__typename === "AlreadyDecidedError")).toHaveLength(decisions.length - 1);
    const won = expectType(winners[0]!, "DecideToolCallSuccess").approval.decision;
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual(won === "APPROVE" ? ["write_report"] : []);
  });

  it("two calls of one step decided at the same moment: the run resumes once, with both decisions", async () => {
    const { client } = await start();
    const { run } = await admit(client, {
      question: callTools({ name: "write_report", arguments: { n: 1 } }, { name: "write_report", arguments: { n: 2 } }),
    });
    const pending = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    expect(pending).toHaveLength(2);
    const results = await Promise.all(
      pending.map((approval) =>
        decide(client, {
          runId: run.id,
          toolCallId: approval.toolCallId,
          decision: approval.arguments === '{"n":1}' ? "APPROVE" : "REJECT",
          reason: "one is enough",
        }),
      ),
    );
    expect(results.map((result) => result.__typename)).toEqual(["DecideToolCallSuccess", "DecideToolCallSuccess"]);
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(executed).toEqual(["write_report"]);
    expect(done.answer).toContain('write_report done with {"n":1}');
    expect(done.answer).toMatch(/Reason: one is enough\./);
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
  });

  it("another principal's decision is NotFound and changes nothing", async () => {
    const { t } = await start();
    const owner = t.as(await t.createPrincipal("owner"));
    const stranger = t.as(await t.createPrincipal("stranger"));
    const { run } = await admit(owner, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(owner, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    expectType(await decide(stranger, { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" }), "NotFoundError");
    expect((await waiting(owner, run.id)).pendingApprovals.edges.map((edge) => edge.node)).toHaveLength(1);
    expect(executed).toEqual([]);
  });

  it("cancelling a waiting run ends it at once and rejects its waiting calls", async () => {
    const { client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    const cancelled = await client.request(CancelRunDocument, { input: { runId: run.id } });
    expect(expectType(cancelled.cancelRun, "CancelRunSuccess").run.status).toBe("CANCELLED");
    const late = expectType(await decide(client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" }), "AlreadyDecidedError");
    expect(late.approval).toMatchObject({ decision: "REJECT", reason: "the run was cancelled" });
    const done = await settled(client, run.id);
    expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
    // The rejection is in the trace, before it ended.
    const [recorded] = recordedDecisions(done);
    expect(recorded).toMatchObject({ span: "TOOL_CALL", decision: "REJECT", decidedBy: null, reason: "the run was cancelled" });
    expect(Number(recorded!.seq)).toBeLessThan(Number(done.trace!.lastSeq));
    expect(executed).toEqual([]);
    // The conversation is free: its next run starts.
    const { run: next } = await admit(client, { conversationId: run.conversation.id, question: callTools({ name: "read_notes" }) });
    expect((await settled(client, next.id)).status).toBe("SUCCEEDED");
  });

  it("a request nobody decides in time counts as rejected: no decision in time", async () => {
    const { client } = await start({ timeoutSeconds: 60 });
    const { run } = await admit(client, { question: callTools({ name: "write_report" }) });
    const [approval] = (await waiting(client, run.id)).pendingApprovals.edges.map((edge) => edge.node);
    clock += 61_000;
    // A decision after the request expired finds it rejected, whoever recorded the expiry first.
    const late = expectType(await decide(client, { runId: run.id, toolCallId: approval!.toolCallId, decision: "APPROVE" }), "AlreadyDecidedError");
    expect(late.approval).toMatchObject({ decision: "REJECT", reason: "no decision in time", decidedBy: null });
    const done = await settled(client, run.id);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.answer).toMatch(/Reason: no decision in time\./);
    expect(executed).toEqual([]);
    expect(recordedDecisions(done)).toMatchObject([{ span: "TOOL_CALL", decision: "REJECT", decidedBy: null, reason: "no decision in time" }]);
  });

  it("a run that reaches its deadline before its step could wait ends; the held call is closed, on its span", async () => {
    const { client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "write_report" }, { name: "endless_read" }), limits: { deadlineSeconds: 2 } });
    const done = await settled(client, run.id);
    expect(done.status).toBe("TIMED_OUT");
    expect(executed).toEqual([]);
    // Settling the run closed the request it never got to wait on, and said so on the call's span.
    expect(recordedDecisions(done)).toMatchObject([
      { span: "TOOL_CALL", toolName: "write_report", decision: "REJECT", decidedBy: null, reason: "the run ended" },
    ]);
  });

  it("the deadline still applies while the run waits", async () => {
    const { client } = await start();
    const { run } = await admit(client, { question: callTools({ name: "write_report" }), limits: { deadlineSeconds: 120 } });
    await waiting(client, run.id);
    // The deadline was set by the real clock at admission; the sweep reads the moved one.
    clock = Date.now() + 125_000;
    const done = await settled(client, run.id);
    expect(done.status).toBe("TIMED_OUT");
    expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
    expect(executed).toEqual([]);
    expect(recordedDecisions(done)).toMatchObject([{ span: "TOOL_CALL", decision: "REJECT", decidedBy: null, reason: "the run reached its deadline" }]);
  });
});
