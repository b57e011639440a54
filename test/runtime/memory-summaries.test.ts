// R6 end to end: later summaries merge-update earlier ones, and a summariser that fails or answers
// nonsense never stops the run nor loses a message (micro-compaction, an ERROR event, and a
// placeholder fold for the request when nothing else fits).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { computeBudget } from "../../src/runtime/memory/budget.js";
import { type StoredSummary, SUMMARY_SECTIONS } from "../../src/runtime/memory/summary.js";
import type { ModelRequest } from "../../src/runtime/ports/model.js";
import { type ScriptStep, ScriptedModel, type ScriptedModelOptions } from "../../src/runtime/adapters/scripted-model.js";
import { backends } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const ORDER = "ORD-2024-0117";
const GOAL = `Payment for order ${ORDER} is stuck. Find out why.`;
const WINDOW = 20_000;
const EFFECTIVE = WINDOW - 8_000 - 3_000;
const TURNS = 30;

/** Each step thinks aloud at length (never compactable) and makes a small call. */
const steps = (_request: ModelRequest, i: number): ScriptStep =>
  i < TURNS - 1
    ? { content: `Step ${i}: ${"reasoning ".repeat(260)}`, toolCalls: [{ name: "task_list", arguments: { action: "list" } }] }
    : { content: "Found it." };

describe.each(backends)("history summaries on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function run(summarize: ScriptedModelOptions["summarize"]) {
    const model = new ScriptedModel({ name: "summaries", contextWindow: WINDOW, steps, summarize });
    t = await startTestApp(backend, { runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sandbox-")) } });
    const { run } = await admit(t.client, { question: GOAL, limits: { maxTurns: 100, tokenBudget: 10_000_000 } });
    const prisma = t.app.db.prisma;
    const runId = Buffer.from(run.id, "base64").toString("utf8").split(":")[1]!;
    const done = await vi.waitFor(
      async () => {
        const current = await prisma.run.findUniqueOrThrow({ where: { id: runId } });
        expect(["QUEUED", "RUNNING"]).not.toContain(current.status);
        return current;
      },
      { timeout: 60_000 },
    );
    const log = await prisma.message.findMany({ where: { conversationId: done.conversationId }, orderBy: { seq: "asc" } });
    const spans = await prisma.span.findMany({ where: { trace: { runId } }, include: { events: true } });
    return { model, done, log, spans };
  }

  it("merge-updates: the second summary keeps the first's sections that newer turns did not change", async () => {
    const { model, done, log } = await run((_request, index) => ({
      content: JSON.stringify(
        index === 0 ? Object.fromEntries(SUMMARY_SECTIONS.map((s) => [s.key, `first ${s.key}`])) : { currentState: `state after summary call ${index}` },
      ),
    }));
    expect(done.status).toBe("SUCCEEDED");
    const summaries = log.filter((m) => m.role === "SUMMARY").map((m) => JSON.parse(m.content) as StoredSummary);
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    const [first, second] = summaries as [StoredSummary, StoredSummary];
    expect(second.coversThroughSeq).toBeGreaterThan(first.coversThroughSeq);
    expect(second.foldedFromSeq).toBe(first.coversThroughSeq + 1);
    expect(second.turnsFolded).toBeGreaterThan(first.turnsFolded);
    expect(second.sections.currentState).toMatch(/^state after summary call \d+$/);
    const { currentState: _a, ...firstRest } = first.sections;
    const { currentState: _b, ...secondRest } = second.sections;
    expect(secondRest).toEqual(firstRest);
    expect(secondRest.keyFacts).toBe("first keyFacts");
    // The merge is the model's input: the previous sections went with the newly folded turns.
    const mergeRequest = model.summaryRequests.find((r) => (r.messages[1]!.content ?? "").includes(`"first keyFacts"`))!;
    expect(mergeRequest.tools).toEqual([]);
    expect(mergeRequest.messages[1]!.content).toMatch(/<turns-to-fold>\n\[\d+\] assistant: Step/);
    // The injected reminder shows the merged sections and the first user message verbatim.
    const last = model.requests.at(-1)!;
    expect(last.messages[1]!.content).toContain("first keyFacts");
    expect(last.messages[1]!.content).toContain(`First user message (verbatim):\n${GOAL}`);
  }, 120_000);

  it.each([
    ["answers nonsense", (): ScriptStep => ({ content: "Sorry, I would rather not." })],
    [
      "fails",
      (): ScriptStep => {
        throw new Error("summary model unavailable");
      },
    ],
  ])(
    "keeps the run working when the summariser %s",
    async (_label, summarize) => {
      const { model, done, log, spans } = await run(summarize);
      expect(done.status).toBe("SUCCEEDED");
      expect(done.answer).toBe("Found it.");
      // Nothing lost, nothing summarised.
      expect(log.filter((m) => m.role === "ASSISTANT")).toHaveLength(TURNS);
      expect(log.filter((m) => m.role === "SUMMARY")).toHaveLength(0);
      expect(model.summaryRequests.length).toBeGreaterThan(0);
      // Every request still fits and still states the goal.
      for (const request of model.requests) {
        const estimate = computeBudget({ contextWindow: WINDOW, systemPrompt: "", tools: request.tools, currentInput: [], history: request.messages }).estimate;
        expect(estimate).toBeLessThanOrEqual(EFFECTIVE);
        expect(request.messages.map((m) => m.content ?? "").join("\n")).toContain(GOAL);
      }
      const errors = spans
        .flatMap((s) => s.events)
        .filter((e) => e.kind === "ERROR")
        .map((e) => e.payload);
      expect(errors.some((e) => e.includes("the history summary could not be written"))).toBe(true);
      expect(spans.filter((s) => s.kind === "COMPACTION").every((s) => s.status === "ERROR")).toBe(true);
      const compactions = spans
        .flatMap((s) => s.events)
        .filter((e) => e.kind === "COMPACTION")
        .map((e) => JSON.parse(e.payload) as { summary: string });
      expect(compactions.some((c) => c.summary === "fallback")).toBe(true);
    },
    120_000,
  );
});
