// R0, R1, R3, R16, T1: a worker executes admitted runs over the conversation log, with
// parallel tools, limits, cancellation and a trace tree.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CancelRunDocument, NodeDocument, RunEventsDocument, RunMaterialsDocument, SpanRequestDocument } from "../../sdk/generated/graphql.js";
import { createLogger, type Logger } from "../../src/logger.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import type { SettleStep } from "../../src/runtime/worker.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { settled as settledRun } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const sleepTool = (name: string, ms: number): Tool => ({
  schema: { name, description: `waits ${ms} ms`, parameters: { type: "object" } },
  execute: (args, { signal }) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve(`${name}: ${JSON.stringify(args)}`), ms);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        reject(new Error("aborted"));
      });
    }),
});

describe.each(backends)("run execution on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function start(steps: ScriptStep[] | ((request: never, i: number) => ScriptStep), extraTools: Tool[] = [], logger?: Logger) {
    const model = new ScriptedModel({ name: "test", steps: steps as ScriptStep[] });
    t = await startTestApp(backend, {
      ...(logger && { logger }),
      runtime: {
        model,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")),
        extraTools,
        leaseMs: 2_000,
        toolTimeoutMs: 5_000,
      },
    });
    return { t, model };
  }

  const settled = (app: TestApp, runId: string, timeoutMs = 15_000) => settledRun(app.client, runId, timeoutMs);

  it("runs three 200 ms tools of one turn concurrently and gives the results back in request order", async () => {
    const { t, model } = await start(
      [
        {
          toolCalls: [
            { name: "slow_c", arguments: { n: 1 } },
            { name: "slow_a", arguments: { n: 2 } },
            { name: "slow_b", arguments: { n: 3 } },
          ],
        },
        { content: "All three answered." },
      ],
      [sleepTool("slow_a", 200), sleepTool("slow_b", 200), sleepTool("slow_c", 200)],
    );
    const { run } = await admit(t.client, { question: "Check three sources" });
    const done = await settled(t, run.id);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "All three answered.", model: "scripted:test" });

    const toolSpans = done.trace!.spans.filter((s) => s.kind === "TOOL_CALL");
    expect(toolSpans.map((s) => s.name)).toEqual(expect.arrayContaining(["execute_tool slow_a", "execute_tool slow_b", "execute_tool slow_c"]));
    const latestStart = Math.max(...toolSpans.map((s) => Date.parse(s.startedAt)));
    const earliestEnd = Math.min(...toolSpans.map((s) => Date.parse(s.endedAt!)));
    expect(latestStart).toBeLessThan(earliestEnd);

    const secondRequest = model.requests[1]!.messages;
    expect(secondRequest.filter((m) => m.role === "tool").map((m) => (m as { content: string }).content)).toEqual([
      'slow_c: {"n":1}',
      'slow_a: {"n":2}',
      'slow_b: {"n":3}',
    ]);
    expect(done.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT", "TOOL", "TOOL", "TOOL", "ASSISTANT"]);
  });

  it("records a trace tree: run → turns → model and tool calls, with usage, budget and the request sent", async () => {
    const { t } = await start([
      {
        toolCalls: [{ name: "task_list", arguments: { action: "add", title: "Read the filings" } }],
        usage: { input: 100, output: 10, cached: 40, reasoning: 3 },
      },
      { content: "Done.", usage: { input: 150, output: 20 } },
    ]);
    const { run } = await admit(t.client, { question: "Plan it" });
    const done = await settled(t, run.id);
    const spans = done.trace!.spans;
    const root = spans.find((s) => s.kind === "RUN")!;
    expect(root).toMatchObject({ parentId: null, status: "OK", name: "invoke_agent researcher" });
    expect((await t.client.request(NodeDocument, { id: root.id })).node).toMatchObject({ __typename: "Span", id: root.id });
    expect((await t.as(await t.createPrincipal("Other")).request(NodeDocument, { id: root.id })).node).toBeNull();
    const attempt = spans.find((s) => s.kind === "ATTEMPT")!;
    expect(attempt).toMatchObject({ parentId: root.id, status: "OK", name: "attempt 1" });
    expect(done.attempts).toMatchObject([{ number: 1, outcome: "COMPLETED", span: { id: attempt.id } }]);
    const turns = spans.filter((s) => s.kind === "TURN");
    expect(turns.map((s) => s.parentId)).toEqual([attempt.id, attempt.id]);
    const models = spans.filter((s) => s.kind === "MODEL_CALL");
    expect(models.map((s) => s.name)).toEqual(["chat scripted:test", "chat scripted:test"]);
    expect(models[0]!.usage).toEqual({ input: 100, output: 10, cached: 40, reasoning: 3 });
    expect(done.trace!.usage).toEqual({ input: 250, output: 30, cached: 40, reasoning: 3 });
    expect(root.usage).toBeNull();
    expect(root.cumulativeUsage).toEqual(done.trace!.usage);
    expect(turns[0]!.cumulativeUsage).toEqual(models[0]!.usage);
    expect(done.tokensUsed).toBe(280);
    const attributes = JSON.parse(models[1]!.attributes) as { budget: { effectiveWindow: number } };
    const request = expectType((await t.client.request(SpanRequestDocument, { id: models[1]!.id })).node!, "Span").request!;
    expect((JSON.parse(request) as { role: string }[]).map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(attributes.budget.effectiveWindow).toBe(128_000 - 8_000 - 3_000);
    const tool = spans.find((s) => s.kind === "TOOL_CALL")!;
    expect(tool.events.map((e) => e.kind)).toEqual(["TOOL_INPUT", "TOOL_OUTPUT"]);
    expect(tool.events[1]!.preview).toContain("Read the filings");
    expect(turns.flatMap((turn) => spans.filter((s) => s.parentId === turn.id).map((s) => s.kind))).toEqual(["MODEL_CALL", "TOOL_CALL", "MODEL_CALL"]);
    const seqs = spans.flatMap((s) => s.events.map((e) => e.seq));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(done.trace!.endedAt).not.toBeNull();
  });

  it("continues the conversation: the second run's first request contains the first run's exchange", async () => {
    const { t, model } = await start([{ content: "The first answer." }, { content: "The second answer." }]);
    const first = await admit(t.client, { question: "First question" });
    await settled(t, first.run.id);
    const second = await admit(t.client, { conversationId: first.run.conversation.id, question: "Follow-up" });
    expect((await settled(t, second.run.id)).answer).toBe("The second answer.");
    expect(model.requests[1]!.messages.slice(1)).toEqual([
      { role: "user", content: "First question" },
      { role: "assistant", content: "The first answer." },
      { role: "user", content: "Follow-up" },
    ]);
  });

  it("runs under the configured agent profile: its system prompt and only its tools", async () => {
    const model = new ScriptedModel({ name: "profiles", steps: [{ content: "scouted" }] });
    t = await startTestApp(backend, {
      agents: [{ name: "scout", systemPrompt: "You scout sources quickly.", tools: ["task_list"] }],
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")) },
    });
    const { run } = await admit(t.client, { question: "Find sources", agent: "scout" });
    expect((await settled(t, run.id)).status).toBe("SUCCEEDED");
    expect(model.requests[0]!.messages[0]).toEqual({ role: "system", content: "You scout sources quickly." });
    expect(model.requests[0]!.tools.map((tool) => tool.name)).toEqual(["task_list"]);
  });

  it("cancels during a long tool call: CANCELLED, spans closed, nothing left running", async () => {
    const { t } = await start([{ toolCalls: [{ name: "very_slow", arguments: {} }] }, { content: "never" }], [sleepTool("very_slow", 30_000)]);
    const { run } = await admit(t.client, { question: "Take your time" });
    await expect
      .poll(async () => (await t.client.runTrace(run.id))!.trace?.spans.map((s) => s.kind), {
        timeout: 5_000,
        interval: 25,
      })
      .toContain("TOOL_CALL");
    const cancelled = await t.client.request(CancelRunDocument, { input: { runId: run.id } });
    expect(expectType(cancelled.cancelRun, "CancelRunSuccess").run.status).toBe("CANCELLED");
    const started = Date.now();
    const view = await vi.waitFor(
      async () => {
        const current = (await t.client.runTrace(run.id))!;
        expect(current.trace?.endedAt).toBeTruthy();
        return current;
      },
      { timeout: 5_000, interval: 25 },
    );
    expect(view.status).toBe("CANCELLED");
    expect(view.trace!.spans.every((s) => s.status !== "RUNNING" && s.endedAt !== null)).toBe(true);
    expect(view.trace!.spans.find((s) => s.kind === "TOOL_CALL")?.status).toBe("CANCELLED");
    // The attempt stops its tool at once and gives back its lease; it wrote nothing else.
    await vi.waitFor(() => expect(t.app.runtime!.worker["active"].size).toBe(0), { timeout: Math.max(0, 5_000 - (Date.now() - started)), interval: 25 });
    const after = (await t.client.runTrace(run.id))!;
    expect(after.attempts).toMatchObject([{ number: 1, outcome: "COMPLETED" }]);
    expect(after.attempts[0]!.endedAt).not.toBeNull();
    expect(after.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT"]);
  });

  it("fails a request that cannot fit the context window with a clear reason, before calling the model", async () => {
    const model = new ScriptedModel({ name: "small", contextWindow: 16_000, steps: [{ content: "unreachable" }] });
    t = await startTestApp(backend, {
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")) },
    });
    const { run } = await admit(t.client, { question: "x".repeat(19_000) + " and more words ".repeat(60) });
    const done = await settled(t, run.id);
    expect(done).toMatchObject({ status: "FAILED", failureReason: "CONTEXT_OVERFLOW" });
    expect(model.stepsTaken).toBe(0);
    const budget = done.trace!.spans.flatMap((s) => s.events).find((e) => e.kind === "BUDGET");
    expect(budget?.preview).toContain('"overBudget":true');
  });

  it("streams status changes to a runEvents subscriber and completes after the terminal one", async () => {
    const model = new ScriptedModel({ name: "events", steps: [{ content: "done", delayMs: 300 }] });
    t = await startTestApp(backend, {
      listen: true,
      runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")) },
    });
    const client = t.connect();
    // Hold the worker so the subscription is in place before the run starts.
    await t.app.runtime!.worker.stop();
    const { run } = await admit(client, { question: "watch me" });
    const statuses: string[] = [];
    const iterator = client.subscribe(RunEventsDocument, { runId: run.id });
    const app = t;
    const listening = app.listeners();
    // No early return: the loop ends only when the server completes the subscription.
    const collected = (async () => {
      let last = null;
      for await (const event of { [Symbol.asyncIterator]: () => iterator }) {
        statuses.push(event.runEvents.status);
        last = event.runEvents.run;
      }
      return last;
    })();
    await vi.waitFor(() => expect(app.listeners()).toBeGreaterThan(listening), { timeout: 4_000, interval: 20 });
    t.app.runtime!.worker.start();
    const final = await collected;
    // First the status the run has when subscribed, then each change.
    expect(statuses).toEqual(["QUEUED", "RUNNING", "SUCCEEDED"]);
    expect(final).toMatchObject({ id: run.id, status: "SUCCEEDED", answer: "done" });

    // Subscribing to the settled run delivers its terminal status once and completes, keeping no listener.
    const idle = t.listeners();
    const late: string[] = [];
    for await (const event of { [Symbol.asyncIterator]: () => client.subscribe(RunEventsDocument, { runId: run.id }) }) {
      late.push(event.runEvents.status);
      expect(event.runEvents.run).toMatchObject({ id: run.id, status: "SUCCEEDED" });
    }
    expect(late).toEqual(["SUCCEEDED"]);
    expect(t.listeners()).toBe(idle);
  });

  it("a run whose settling fails ends FAILED with INTERNAL_ERROR and none of the settle steps' effects, once", async () => {
    const lines: string[] = [];
    const { t } = await start(
      [{ toolCalls: [{ name: "propose_checkpoint", arguments: { summary: "Settled nothing." } }] }, { content: "An answer that cannot be settled." }],
      [],
      createLogger("info", (line) => lines.push(line)),
    );
    const steps = (t.app.runtime!.worker as unknown as { options: { settleSteps: SettleStep[] } }).options.settleSteps;
    let calls = 0;
    steps.push(async ({ tx, run, status }) => {
      if (status !== "SUCCEEDED") return;
      calls += 1;
      // A write made before the failure must not survive it.
      await tx.run.update({ where: { id: run.id }, data: { tokensUsed: 999_999 } });
      throw new Error("the archive is unreachable");
    });
    const workspace = await createWorkspace(t.client);
    const { run } = await admit(t.client, { workspaceId: workspace.id, question: "Answer, then fail to settle" });
    const done = await settled(t, run.id);
    expect(done).toMatchObject({ status: "FAILED", failureReason: "INTERNAL_ERROR", answer: null });
    expect(done.tokensUsed).not.toBe(999_999);
    expect(done.attempts.map((a) => a.outcome)).toEqual(["COMPLETED"]);
    expect(done.trace!.spans.find((s) => s.kind === "RUN")!.status).toBe("ERROR");
    expect(done.trace!.spans.filter((s) => s.status === "RUNNING")).toEqual([]);
    expect(calls).toBe(1);
    // Settled as failed: nothing published, its proposal dropped rather than left pending.
    const materials = (await t.client.request(RunMaterialsDocument, { id: run.id })).run!;
    expect(materials.acceptedPublicationVersions.edges.map((edge) => edge.node)).toEqual([]);
    expect(materials.checkpointProposals.edges.map((edge) => edge.node).map((p) => p.status)).toEqual(["DROPPED"]);
    // The log says why the run failed, not only that it did.
    const settledLine = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry.message === "run settled");
    expect(settledLine).toMatchObject({
      level: "warn",
      runId: Buffer.from(run.id, "base64").toString().split(":")[1],
      status: "FAILED",
      failureReason: "INTERNAL_ERROR",
    });
    expect(settledLine!.error).toBe("settling the run failed: the archive is unreachable");
  });

  it("hands a run back on a graceful worker stop; the next worker resumes it from the log, keeping the results that finished", async () => {
    const { t, model } = await start(
      ((request: { messages: { role: string }[] }) =>
        request.messages.at(-1)?.role === "tool"
          ? { content: "resumed and answered" }
          : {
              toolCalls: [
                { name: "very_slow", arguments: {} },
                { name: "quick", arguments: {} },
              ],
            }) as never,
      [sleepTool("very_slow", 30_000), sleepTool("quick", 0)],
    );
    const { run } = await admit(t.client, { question: "long job" });
    await vi.waitFor(
      async () => {
        const view = (await t.client.runTrace(run.id))!;
        expect(view.trace?.spans.some((s) => s.name === "execute_tool quick" && s.status === "OK")).toBe(true);
      },
      { timeout: 5_000, interval: 25 },
    );
    await t.app.runtime!.worker.stop();
    const handedBack = await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: Buffer.from(run.id, "base64").toString().split(":")[1] } });
    expect(handedBack).toMatchObject({ status: "RUNNING", leaseOwner: null });

    t.app.runtime!.worker.start();
    const done = await settled(t, run.id);
    expect(done).toMatchObject({ status: "SUCCEEDED", answer: "resumed and answered" });
    // The result that finished was logged when it finished and survives the stop; the cut-off
    // call has none: the next attempt records it as repaired, and the model saw the finished
    // result, then the neutral note (repair.ts places notes after the results a turn has).
    expect(done.messages.edges.map((e) => e.node.role)).toEqual(["USER", "ASSISTANT", "TOOL", "REPAIR", "ASSISTANT"]);
    expect(done.messages.edges[2]!.node.content).toBe("quick: {}");
    expect(done.messages.edges[3]!.node.content).toMatch(/may or may not have executed/);
    const resumed = model.requests.at(-1)!.messages.slice(-2) as { role: string; content: string }[];
    expect(resumed.map((m) => m.role)).toEqual(["tool", "tool"]);
    expect(resumed[0]!.content).toBe("quick: {}");
    expect(resumed[1]!.content).toMatch(/very_slow.*may or may not have executed/);
    expect(done.attempts.map((a) => a.outcome)).toEqual(["HANDED_BACK", "COMPLETED"]);
    const [first, second] = done.attempts.map((a) => done.trace!.spans.find((s) => s.id === a.span!.id)!);
    expect(first).toMatchObject({ status: "INTERRUPTED" });
    expect(first!.events.map((e) => e.kind)).toEqual(["INTERRUPTION"]);
    expect(first!.events[0]!.preview).toMatch(/^handed back/);
    expect(second).toMatchObject({ status: "OK" });
    expect(done.trace!.spans.filter((s) => s.kind === "RUN")).toHaveLength(1);
    expect(done.trace!.spans.every((s) => s.status !== "RUNNING")).toBe(true);
  });

  it("fails with MAX_TURNS and TOKEN_BUDGET, and times out at the deadline", async () => {
    const looping: ScriptStep = { toolCalls: [{ name: "task_list", arguments: { action: "list" } }], usage: { input: 1_000, output: 100 } };
    const { t } = await start(
      (_request: never, i: number) => (i === 4 ? { toolCalls: [{ name: "sleepy", arguments: {} }] } : looping),
      [sleepTool("sleepy", 10_000)],
    );
    const turns = await admit(t.client, { question: "loop", limits: { maxTurns: 2 } });
    expect(await settled(t, turns.run.id)).toMatchObject({ status: "FAILED", failureReason: "MAX_TURNS" });
    const tokens = await admit(t.client, { question: "spend", limits: { tokenBudget: 1_500 } });
    expect(await settled(t, tokens.run.id)).toMatchObject({ status: "FAILED", failureReason: "TOKEN_BUDGET" });
    const late = await admit(t.client, { question: "slow", limits: { deadlineSeconds: 1 } });
    const timedOut = await settled(t, late.run.id);
    expect(timedOut).toMatchObject({ status: "TIMED_OUT", answer: null });
    expect(timedOut.trace!.spans.every((s) => s.endedAt !== null)).toBe(true);
  });
});
