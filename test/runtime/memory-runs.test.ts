// R0, R5, R6, R8, T1 end to end: long runs and many rounds stay within the model's window, keep the
// user's goal in every request, never lose a log entry, and evidence ids resolve to the originals.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ModelRequest, ToolSchema } from "../../src/runtime/ports/model.js";
import type { Tool } from "../../src/runtime/ports/tool.js";
import { computeBudget } from "../../src/runtime/memory/budget.js";
import type { ContextBudget } from "../../src/runtime/memory/context-builder.js";
import type { StoredSummary } from "../../src/runtime/memory/summary.js";
import { type ScriptStep, ScriptedModel, type ScriptedModelOptions } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { asks } from "../support/requests.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const ORDER = "ORD-2024-0117";
const GOAL = `Payment for order ${ORDER} is stuck. Find out why and tell me.`;
const WINDOW = 20_000;
const EFFECTIVE = WINDOW - 8_000 - 3_000;

/** A tool whose results are large (no order id in them: the goal must survive through the summary). */
const queryTool: Tool = {
  schema: { name: "query_ledger", description: "reads ledger pages", parameters: { type: "object" } },
  // A JSON result of ~4,350 characters: ~1,250 tokens under the +15 % JSON rule.
  execute: async (args) => JSON.stringify({ page: (args as { page: number }).page, rows: "r".repeat(4_330) }),
};
const noteTool: Tool = {
  schema: { name: "write_note", description: "stores a note", parameters: { type: "object" } },
  execute: async () => "stored",
};

const requestText = (request: ModelRequest) => request.messages.map((m) => `${m.content ?? ""}`).join("\n");
const estimateOf = (request: ModelRequest, tools: ToolSchema[]) =>
  computeBudget({ contextWindow: WINDOW, systemPrompt: "", tools, currentInput: [], history: request.messages }).estimate;

describe.each(backends)("progressive memory on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function start(options: Omit<ScriptedModelOptions, "name">, extraTools: Tool[] = [queryTool, noteTool], policies = {}, contextBudget?: ContextBudget) {
    const model = new ScriptedModel({ name: "memory", contextWindow: WINDOW, ...options });
    t = await startTestApp(backend, {
      runtime: {
        model,
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")),
        extraTools,
        compactionPolicies: policies,
        contextBudget,
      },
    });
    return { t, model, prisma: t.app.db.prisma };
  }

  async function settle(app: TestApp, runId: string, timeoutMs = 120_000) {
    const prisma = app.app.db.prisma;
    const localId = Buffer.from(runId, "base64").toString("utf8").split(":").at(-1)!;
    return vi.waitFor(
      async () => {
        const run = await prisma.run.findUniqueOrThrow({ where: { id: localId } });
        if (["QUEUED", "RUNNING"].includes(run.status)) throw new Error(`run still ${run.status}`);
        return run;
      },
      { timeout: timeoutMs },
    );
  }

  const limits = { maxTurns: 300, tokenBudget: 100_000_000, deadlineSeconds: 3_600 };

  it("runs 200 turns with large results and arguments within budget, the goal in every request", async () => {
    const steps = (_request: ModelRequest, i: number): ScriptStep =>
      i < 199
        ? {
            toolCalls: [
              { name: "query_ledger", arguments: { page: i } },
              { name: "write_note", arguments: { text: `note ${i} ${"n".repeat(3_000)}` } },
            ],
          }
        : { content: "The payment is stuck in the acquirer queue." };
    const { t, model, prisma } = await start({ steps });
    const { run } = await admit(t.client, { question: GOAL, limits });
    const done = await settle(t, run.id);
    expect(done.status).toBe("SUCCEEDED");

    expect(model.requests).toHaveLength(200);
    const tools = model.requests[0]!.tools;
    for (const request of model.requests) {
      expect(estimateOf(request, tools)).toBeLessThanOrEqual(EFFECTIVE);
      expect(requestText(request)).toContain(ORDER);
    }
    // Later requests carry the goal through the summary's P0 section.
    const last = model.requests.at(-1)!;
    expect(last.messages[1]!.content).toContain(`First user message (verbatim):\n${GOAL}`);
    expect(model.summaryRequests.length).toBeGreaterThan(0);

    // Nothing was lost: every entry is in the log, and summaries were appended.
    const log = await prisma.message.findMany({ where: { conversationId: done.conversationId }, orderBy: { seq: "asc" } });
    expect(log.filter((m) => m.role === "TOOL")).toHaveLength(398);
    expect(log.filter((m) => m.role === "ASSISTANT")).toHaveLength(200);
    expect(log[0]!.content).toBe(GOAL);
    const summaries = log.filter((m) => m.role === "SUMMARY").map((m) => JSON.parse(m.content) as StoredSummary);
    expect(summaries.length).toBeGreaterThan(1);
    // A large fold is summarised in chunks, each merge-updating the last: at least one call per summary.
    expect(model.summaryRequests.length).toBeGreaterThanOrEqual(summaries.length);
    expect(summaries.map((s) => s.coversThroughSeq)).toEqual([...summaries.map((s) => s.coversThroughSeq)].sort((a, b) => a - b));

    // The trace says what happened: COMPACTION events with stats, summarisation spans.
    const trace = await prisma.trace.findFirstOrThrow({ where: { runId: done.id } });
    const spans = await prisma.span.findMany({ where: { traceId: trace.id }, include: { events: true } });
    const compactionSpans = spans.filter((s) => s.kind === "COMPACTION");
    expect(compactionSpans).toHaveLength(summaries.length);
    expect(compactionSpans.every((s) => s.status === "OK")).toBe(true);
    const events = spans.flatMap((s) => s.events).filter((e) => e.kind === "COMPACTION");
    const payloads = events.map(
      (e) => JSON.parse(e.payload) as { summary: string; turnsFolded: number; tokensBefore: number; tokensAfter: number; evidenceCleared: string[] },
    );
    const folds = payloads.filter((p) => p.summary === "new");
    expect(folds).toHaveLength(summaries.length);
    expect(folds.every((p) => p.turnsFolded > 0 && p.tokensAfter < p.tokensBefore)).toBe(true);
    expect(payloads.some((p) => p.evidenceCleared.some((id) => /^ev_[A-Za-z0-9]+_a\d+$/.test(id)))).toBe(true);
  }, 180_000);

  it("compacts earlier under a lower COMPACTION_TRIGGER_RATIO", async () => {
    // Three ledger pages of ~1,250 tokens each, then the answer: about 4,000 tokens in all, under
    // the default trigger (90% of the 9,000-token effective window) but over a 30% one.
    const steps = (_request: ModelRequest, i: number): ScriptStep =>
      i < 3 ? { toolCalls: [{ name: "query_ledger", arguments: { page: i } }] } : { content: "The payment waits for the acquirer." };
    const clearedIn = async (contextBudget?: ContextBudget) => {
      const { t: app, model, prisma } = await start({ steps }, [queryTool, noteTool], {}, contextBudget);
      const { run } = await admit(app.client, { question: GOAL, limits });
      const done = await settle(app, run.id);
      expect(done.status).toBe("SUCCEEDED");
      const trace = await prisma.trace.findFirstOrThrow({ where: { runId: done.id } });
      const events = await prisma.spanEvent.findMany({ where: { span: { traceId: trace.id }, kind: "COMPACTION" } });
      await app.close();
      t = undefined;
      return {
        requests: model.requests.map((request) => requestText(request).includes("cleared — evidence")),
        cleared: events.flatMap((e) => (JSON.parse(e.payload) as { evidenceCleared: string[] }).evidenceCleared),
        summaries: model.summaryRequests.length,
      };
    };
    const byDefault = await clearedIn();
    expect(byDefault.requests).toEqual([false, false, false, false]);
    expect(byDefault.cleared).toEqual([]);
    expect(byDefault.summaries).toBe(0);
    // At 30%, the third request already shows the first page as cleared, and the last one needs a summary.
    const early = await clearedIn({ triggerRatio: 0.3 });
    expect(early.requests).toEqual([false, false, true, false]);
    expect(early.cleared).toHaveLength(1);
    expect(early.summaries).toBeGreaterThan(0);
  }, 60_000);

  it("still carries round one's goal in the requests of round twenty", async () => {
    const { t, model, prisma } = await start({
      steps: (request) => {
        const lastUser = request.messages.findLastIndex((m) => m.role === "user");
        const calledSince = request.messages.slice(lastUser + 1).some((m) => m.role === "assistant");
        return calledSince ? { content: `Answer: ${"a".repeat(2_500)}` } : { toolCalls: [{ name: "query_ledger", arguments: { page: lastUser } }] };
      },
    });
    const first = await admit(t.client, { question: GOAL });
    await settle(t, first.run.id);
    const conversationId = first.run.conversation.id;
    for (let round = 2; round <= 20; round += 1) {
      const next = await admit(t.client, { question: `Follow-up ${round}: what else changed?`, conversationId });
      expect((await settle(t, next.run.id)).status).toBe("SUCCEEDED");
    }
    const round20 = model.requests.slice(-2);
    for (const request of round20) {
      expect(requestText(request)).toContain(GOAL);
      expect(estimateOf(request, request.tools)).toBeLessThanOrEqual(EFFECTIVE);
      expect(request.messages.some((m) => asks(m, "Follow-up 20: what else changed?"))).toBe(true);
    }
    // Round one's own message is folded by then: the goal comes from the summary.
    expect(round20[0]!.messages.filter((m) => asks(m, GOAL))).toHaveLength(0);
    const log = await prisma.message.findMany({ where: { conversation: { runs: { some: {} } }, role: "USER" } });
    expect(log).toHaveLength(20);
  }, 180_000);
});
