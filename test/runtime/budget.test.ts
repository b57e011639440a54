// R8: the dynamic history budget, with the figures recorded on model-request spans.
import { describe, expect, it } from "vitest";
import type { ChatMessage, ToolSchema } from "../../src/runtime/ports/model.js";
import { computeBudget } from "../../src/runtime/memory/budget.js";
import type { TokenEstimator } from "../../src/runtime/memory/token-estimator.js";

// One token per character and 100 per tool: the arithmetic below can be checked by hand.
const charEstimator: TokenEstimator = {
  text: (s) => s.length,
  messages: (m) => m.reduce((sum, message) => sum + (message.content ?? "").length, 0),
  tools: (t) => t.length * 100,
};

const tool = (name: string): ToolSchema => ({ name, description: name, parameters: { type: "object" } });
const user = (tokens: number): ChatMessage => ({ role: "user", content: "u".repeat(tokens) });
const assistant = (tokens: number): ChatMessage => ({ role: "assistant", content: "a".repeat(tokens) });

// A 128k window: effective 128,000 − 8,000 − 3,000 = 117,000; trigger 117,000 × 0.9 = 105,300.
// Fixed overhead: system prompt 2,000 + 3 tools × 100 + current input 700 = 3,000.
const base = {
  contextWindow: 128_000,
  systemPrompt: "s".repeat(2_000),
  tools: [tool("search"), tool("read"), tool("write")],
  currentInput: [user(700)],
  estimator: charEstimator,
};

describe("computeBudget", () => {
  it("breaks a 128k window down with the default reserve, buffer and 90% trigger", () => {
    const budget = computeBudget({ ...base, history: [user(40_000), assistant(60_000)], summary: user(2_000) });
    expect(budget).toEqual({
      contextWindow: 128_000,
      reservedOutput: 8_000,
      safetyBuffer: 3_000,
      effectiveWindow: 117_000,
      systemPromptTokens: 2_000,
      toolSchemaTokens: 300,
      currentInputTokens: 700,
      fixedOverhead: 3_000,
      historyBudget: 114_000,
      historyTokens: 100_000,
      summaryTokens: 2_000,
      estimate: 105_000,
      trigger: 105_300,
      overTrigger: false,
      overBudget: false,
    });
  });

  it("is over the trigger one token past 90% of the effective window, but not yet over budget", () => {
    const atTrigger = computeBudget({ ...base, history: [assistant(100_300)], summary: user(2_000) });
    expect(atTrigger).toMatchObject({ estimate: 105_300, overTrigger: false, overBudget: false });
    const pastTrigger = computeBudget({ ...base, history: [assistant(100_301)], summary: user(2_000) });
    expect(pastTrigger).toMatchObject({ estimate: 105_301, overTrigger: true, overBudget: false });
  });

  it("is over budget only past the effective window", () => {
    const full = computeBudget({ ...base, history: [assistant(114_000)] });
    expect(full).toMatchObject({ estimate: 117_000, overTrigger: true, overBudget: false });
    const over = computeBudget({ ...base, history: [assistant(114_001)] });
    expect(over).toMatchObject({ estimate: 117_001, overTrigger: true, overBudget: true });
  });

  it("counts a missing or null summary as 0 and lets the history budget go negative", () => {
    expect(computeBudget({ ...base, history: [], summary: null }).summaryTokens).toBe(0);
    const huge = computeBudget({ ...base, currentInput: [user(120_000)], history: [] });
    expect(huge).toMatchObject({ fixedOverhead: 122_300, historyBudget: -5_300, overBudget: true });
  });

  it("honours a custom reserve, buffer and trigger ratio", () => {
    const budget = computeBudget({
      ...base,
      reservedOutput: 16_000,
      safetyBuffer: 2_000,
      triggerRatio: 0.8,
      history: [assistant(88_000)],
    });
    expect(budget).toMatchObject({ effectiveWindow: 110_000, trigger: 88_000, estimate: 91_000, overTrigger: true });
    // 90 × 0.7 is 62.999… in floating point: the trigger is still a whole 63 tokens.
    const small = computeBudget({ ...base, contextWindow: 90, reservedOutput: 0, safetyBuffer: 0, triggerRatio: 0.7, history: [] });
    expect(small.trigger).toBe(63);
  });

  it("uses the local estimator by default", () => {
    const budget = computeBudget({
      contextWindow: 128_000,
      systemPrompt: "a".repeat(4_000), // 1,000 + 4 framing
      tools: [],
      currentInput: [{ role: "user", content: "b".repeat(400) }], // 100 + 4
      history: [],
    });
    expect(budget).toMatchObject({ systemPromptTokens: 1_004, toolSchemaTokens: 0, currentInputTokens: 104, fixedOverhead: 1_108 });
  });

  it("throws RangeError when the window cannot hold the reserve and buffer, or a parameter is invalid", () => {
    const empty = { systemPrompt: "", tools: [], currentInput: [], history: [] };
    expect(() => computeBudget({ ...empty, contextWindow: 11_000 })).toThrow(RangeError);
    expect(() => computeBudget({ ...empty, contextWindow: 8_000 })).toThrow(/too small/);
    expect(computeBudget({ ...empty, contextWindow: 11_001 }).effectiveWindow).toBe(1);
    expect(() => computeBudget({ ...empty, contextWindow: 0 })).toThrow(RangeError);
    expect(() => computeBudget({ ...empty, contextWindow: Number.NaN })).toThrow(RangeError);
    expect(() => computeBudget({ ...empty, contextWindow: 128_000, reservedOutput: -1 })).toThrow(RangeError);
    expect(() => computeBudget({ ...empty, contextWindow: 128_000, triggerRatio: 0 })).toThrow(RangeError);
    expect(() => computeBudget({ ...empty, contextWindow: 128_000, triggerRatio: 1.5 })).toThrow(RangeError);
  });
});
