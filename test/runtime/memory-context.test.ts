// R5, R6, R8: the pure part of building a request — micro-compaction of completed turns by per-tool
// policy, evidence ids, the carried set, the summary's rendering, trimming and merge-update.
import { describe, expect, it } from "vitest";
import type { Message } from "../../src/generated/prisma/client.js";
import { buildContext } from "../../src/runtime/memory/context-builder.js";
import { planContext } from "../../src/runtime/memory/context-plan.js";
import { validateProtocol } from "../../src/runtime/memory/repair.js";
import {
  emptySections,
  MalformedSummaryError,
  mergeSummaryAnswer,
  renderSummary,
  SUMMARY_SECTIONS,
  type SummarySections,
} from "../../src/runtime/memory/summary.js";
import { estimateMessageTokens } from "../../src/runtime/memory/token-estimator.js";

const GOAL = "Why is payment for order ORD-2024-0117 stuck? Find the cause.";
const big = (label: string, chars = 6_000) => `${label}:${"x".repeat(chars)}`;

function logOf(entries: Partial<Message>[]): Message[] {
  return entries.map((entry, index) => ({
    id: `m${index + 1}`,
    conversationId: "c1",
    seq: index + 1,
    role: "USER",
    content: "",
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    runId: "r1",
    createdAt: new Date(0),
    ...entry,
  }));
}

const call = (id: string, name: string, args: string) => ({ id, name, arguments: args });
const assistant = (calls: ReturnType<typeof call>[], content = ""): Partial<Message> => ({ role: "ASSISTANT", content, toolCalls: calls });
const result = (id: string, name: string, content: string): Partial<Message> => ({ role: "TOOL", toolCallId: id, toolName: name, content });

/** Three tool turns: query_order (big args + result), place_order (big result), query_order again (latest, incomplete). */
const threeTurns = () =>
  logOf([
    { role: "USER", content: GOAL },
    assistant([call("c1", "query_order", JSON.stringify({ filter: big("args") }))]),
    result("c1", "query_order", big("order")),
    assistant([call("c2", "place_order", "{}")]),
    result("c2", "place_order", big("placed")),
    assistant([call("c3", "query_order", "{}")]),
    result("c3", "query_order", big("latest")),
  ]);

const text = (messages: { content: string | null }[]) => messages.map((m) => m.content ?? "").join("\n");

describe("micro-compaction (R5)", () => {
  it("clears large results and arguments of completed turns only, by policy, with evidence ids", () => {
    const log = threeTurns();
    const plan = planContext({
      systemPrompt: "sys",
      log,
      tools: [],
      contextWindow: 128_000,
      policies: { "*": "stale", query_order: "always", place_order: "never" },
    });
    // query_order is "always": its completed turn's args and result are cleared even under budget.
    expect(plan.stats.evidenceCleared).toEqual(["ev_m2_a0", "ev_m3"]);
    const tool = plan.messages.find((m) => m.role === "tool" && m.toolCallId === "c1")!;
    expect(tool.content).toMatch(/^\[earlier result of query_order cleared — evidence ev_m3; 6006 characters/);
    const firstCall = plan.messages.find((m) => m.role === "assistant")!;
    expect(firstCall.role === "assistant" && JSON.parse(firstCall.toolCalls![0]!.arguments)).toEqual({
      cleared: expect.stringContaining("evidence ev_m2_a0"),
    });
    // place_order is "never"; the latest turn has no later model step, so it is not complete.
    expect(text(plan.messages)).toContain(big("placed"));
    expect(text(plan.messages)).toContain(big("latest"));
    expect(validateProtocol(plan.messages)).toEqual([]);
    // Compacted entries are not carried; the rest are.
    expect([...plan.carried].sort()).toEqual(["m1", "m4", "m5", "m6", "m7"]);
    expect(plan.stats.tokensAfter).toBeLessThan(plan.stats.tokensBefore - 2_500);
  });

  it('clears "stale" results only while the request is over the trigger, oldest first', () => {
    const log = logOf([
      { role: "USER", content: GOAL },
      ...[1, 2, 3, 4, 5].flatMap((n) => [assistant([call(`c${n}`, "search", "{}")]), result(`c${n}`, "search", big(`r${n}`, 8_000))]),
      { role: "ASSISTANT", content: "done" },
    ]);
    const roomy = planContext({ systemPrompt: "sys", log, tools: [], contextWindow: 128_000 });
    expect(roomy.stats.evidenceCleared).toEqual([]);
    expect(roomy.carried.size).toBe(log.length);
    // 20,000-token window: effective 9,000, trigger 8,100; five results of ~2,000 tokens each.
    const tight = planContext({ systemPrompt: "sys", log, tools: [], contextWindow: 20_000 });
    expect(tight.stats.evidenceCleared).toEqual(["ev_m3", "ev_m5"]);
    expect(tight.budget.overTrigger).toBe(false);
    expect(tight.fold).toBeNull();
  });

  it("keeps the plain builder's contract: everything carried when nothing is compacted", () => {
    const log = threeTurns();
    const built = buildContext({ systemPrompt: "sys", log, tools: [], contextWindow: 128_000 });
    expect(built.carried.size).toBe(log.length);
    expect(built.messages).toHaveLength(log.length + 1);
  });

  it("clears the latest step's oversized arguments once all its calls are answered, never its results", () => {
    const steps = (answered: boolean) =>
      logOf([
        { role: "USER", content: GOAL },
        assistant([call("c1", "query_order", JSON.stringify({ filter: big("args", 120_000) })), call("c2", "search", "{}")]),
        result("c2", "search", big("found", 4_000)),
        ...(answered ? [result("c1", "query_order", big("order", 4_000))] : []),
      ]);
    const plan = planContext({ systemPrompt: "sys", log: steps(true), tools: [], contextWindow: 32_000 });
    expect(plan.stats.evidenceCleared).toEqual(["ev_m2_a0"]);
    expect(plan.budget.overBudget).toBe(false);
    expect(text(plan.messages)).toContain(big("found", 4_000));
    expect(text(plan.messages)).toContain(big("order", 4_000));
    expect(validateProtocol(plan.messages)).toEqual([]);
    // While a call waits for its result, the step's arguments stay as the model wrote them.
    expect(planContext({ systemPrompt: "sys", log: steps(false), tools: [], contextWindow: 32_000 }).stats.evidenceCleared).toEqual([]);
  });

  it("cuts the latest reply's text for the model only when it cannot fit otherwise, with a pointer", () => {
    const answered = (content: string) =>
      logOf([{ role: "USER", content: GOAL }, assistant([call("c1", "search", "{}")], content), result("c1", "search", "ok")]);
    const fits = planContext({ systemPrompt: "sys", log: answered(big("long", 20_000)), tools: [], contextWindow: 32_000 });
    expect(fits.stats.evidenceCleared).toEqual([]);
    expect(text(fits.messages)).toContain(big("long", 20_000));
    const plan = planContext({ systemPrompt: "sys", log: answered(big("huge", 400_000)), tools: [], contextWindow: 32_000 });
    expect(plan.stats.evidenceCleared).toEqual(["ev_m2"]);
    expect(plan.budget.overBudget).toBe(false);
    const shown = plan.messages.find((m) => m.role === "assistant")!.content!;
    expect(shown).toBe(
      `${big("huge", 400_000).slice(0, 2_048)}\n[the rest of this reply was cut for length — evidence ev_m2; 400005 characters in all, read_evidence returns them]`,
    );
    expect(validateProtocol(plan.messages)).toEqual([]);
  });

  it("proposes folding the oldest turns when micro-compaction is not enough, never the latest turn", () => {
    const log = logOf([
      { role: "USER", content: GOAL },
      ...Array.from({ length: 12 }, (_, n) => [assistant([call(`c${n}`, "pay", "{}")], big(`thinking ${n}`, 3_000)), result(`c${n}`, "pay", "ok")]).flat(),
    ]);
    const plan = planContext({ systemPrompt: "sys", log, tools: [], contextWindow: 20_000, runId: "r1" });
    expect(plan.budget.overTrigger).toBe(true);
    expect(plan.fold).not.toBeNull();
    const folded = plan.fold!.entries.map((e) => e.message.seq);
    expect(folded[0]).toBe(2); // the current input (the run's user message) is never folded
    expect(plan.fold!.throughSeq).toBeLessThan(log.at(-2)!.seq);
    expect(log[plan.fold!.throughSeq]!.role).toBe("ASSISTANT"); // the fold ends at a turn boundary
  });
});

describe("structured summary (R6)", () => {
  const full: SummarySections = Object.fromEntries(SUMMARY_SECTIONS.map((s) => [s.key, `${s.key}: ${"detail ".repeat(80)}`])) as SummarySections;

  it("always carries the first user message verbatim, cuts P3 then P2 then P1 when short, never P0", () => {
    const render = (maxTokens: number) =>
      renderSummary({ sections: full, firstUserMessage: GOAL, coversThroughSeq: 40, maxTokens, estimate: estimateMessageTokens });
    const roomy = render(10_000);
    expect(roomy.trimmed).toEqual([]);
    expect(roomy.message.content).toMatch(/^<system-reminder>\n/);
    expect(roomy.message.content).toContain(`First user message (verbatim):\n${GOAL}`);
    const short = render(900);
    expect(short.trimmed.slice(0, 2)).toEqual(["toolResultDigest", "errorsAndFixes"]);
    const tiny = render(1);
    expect(tiny.trimmed).toEqual(["toolResultDigest", "errorsAndFixes", "userConstraints", "pendingTasks", "decisions", "keyFacts"]);
    for (const key of ["primaryRequest", "currentState", "nextStep"]) expect(tiny.message.content).toContain(`${key}: detail`);
    expect(tiny.message.content).toContain(GOAL);
  });

  it("merge-updates: sections the answer leaves out keep their text", () => {
    const merged = mergeSummaryAnswer(full, '```json\n{"currentState":"paid at 10:02","nextStep":"tell the user"}\n```');
    expect(merged).toEqual({ ...full, currentState: "paid at 10:02", nextStep: "tell the user" });
    expect(mergeSummaryAnswer(emptySections(), '{"sections":{"keyFacts":"ORD-2024-0117"}}').keyFacts).toBe("ORD-2024-0117");
  });

  it("rejects malformed answers with a typed error", () => {
    expect(() => mergeSummaryAnswer(full, "I folded the turns.")).toThrow(MalformedSummaryError);
    expect(() => mergeSummaryAnswer(full, '{"currentState": 42}')).toThrow(MalformedSummaryError);
    expect(() => mergeSummaryAnswer(full, '{"unrelated": "x"}')).toThrow(MalformedSummaryError);
    expect(() => mergeSummaryAnswer(full, null)).toThrow(MalformedSummaryError);
  });
});
