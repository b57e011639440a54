// R9: the local estimator on text a tool or a model may return in any script or none — emoji,
// symbols, runs of combining marks, control characters. Its count must not fall far below a real
// tokenizer's, or a request the budget takes to fit goes past the model's window and the run fails
// where it should have compacted.
import { describe, expect, it } from "vitest";
import type { Message } from "../../src/generated/prisma/client.js";
import { tiktokenTokenizer } from "../../src/runtime/adapters/tiktoken-tokenizer.js";
import { planContext } from "../../src/runtime/memory/context-plan.js";
import { estimateTextTokens } from "../../src/runtime/memory/token-estimator.js";

const encodings = [tiktokenTokenizer("o200k_base"), tiktokenTokenizer("cl100k_base")];
const SAMPLES: Record<string, string> = {
  emoji: "😀🎉🚀🔥".repeat(500),
  symbols: "☃❤★✓\uE000".repeat(400),
  "combining marks (one letter, 2,000 marks)": `a${"\u0301".repeat(2_000)}`,
  "stacked diacritics": "e\u0301\u0302\u0303".repeat(500),
  "NUL and other control characters": "\u0000\u0001\u001b".repeat(700),
};

const at = (content: string, index: number, entry: Partial<Message>): Message => ({
  id: `m${index + 1}`,
  conversationId: "c1",
  seq: index + 1,
  role: "USER",
  content,
  toolCalls: null,
  toolCallId: null,
  toolName: null,
  runId: "r1",
  createdAt: new Date(0),
  ...entry,
});

describe("the local estimate of text outside the Latin and CJK scripts", () => {
  for (const [name, text] of Object.entries(SAMPLES)) {
    it(`counts ${name} at no less than 90% of a BPE vocabulary's count`, () => {
      const estimate = estimateTextTokens(text);
      for (const tokenizer of encodings) expect(estimate, tokenizer.name).toBeGreaterThanOrEqual(Math.floor(tokenizer.count(text) * 0.9));
    });
  }

  it("counts the letters of scripts above U+0800 (Thai) at no less than 90% of o200k_base's count", () => {
    const thai = "สวัสดีครับ".repeat(200);
    expect(estimateTextTokens(thai)).toBeGreaterThanOrEqual(Math.floor(encodings[0]!.count(thai) * 0.9));
  });

  it("keeps Latin, CJK and other letter scripts at their rates", () => {
    expect(estimateTextTokens("abcd".repeat(25))).toBe(25);
    expect(estimateTextTokens("你好世界")).toBe(2);
    expect(estimateTextTokens("привет мир!")).toBe(3); // 11 code points of two-byte scripts and ASCII
    expect(estimateTextTokens("déjà vu")).toBe(2);
  });

  it("compacts a run whose tool results are emoji so that the request fits the model's window", () => {
    // Five turns of a tool answering 3,000 emoji (6,000 UTF-16 characters, under the spill threshold).
    const emoji = "😀🎉🚀🔥".repeat(750);
    const entries: Message[] = [at("Describe the reactions.", 0, {})];
    for (let n = 1; n <= 5; n += 1) {
      entries.push(at("", entries.length, { role: "ASSISTANT", toolCalls: [{ id: `c${n}`, name: "reactions", arguments: "{}" }] }));
      entries.push(at(emoji, entries.length, { role: "TOOL", toolCallId: `c${n}`, toolName: "reactions" }));
    }
    // A 20,000-token window: 9,000 tokens for the request once the output and safety reserves are set aside.
    const plan = planContext({ systemPrompt: "You describe.", log: entries, tools: [], contextWindow: 20_000 });
    expect(plan.budget.effectiveWindow).toBe(9_000);
    expect(plan.stats.evidenceCleared).toEqual(["ev_m3", "ev_m5", "ev_m7", "ev_m9"]);
    const sent = plan.messages.map((message) => message.content ?? "").join("\n");
    for (const tokenizer of encodings) expect(tokenizer.count(sent), tokenizer.name).toBeLessThanOrEqual(plan.budget.effectiveWindow);
  });
});
