// R9: the tokenizer port. The context budget counts with the local estimator by default and with
// a plugged-in tokenizer when one is configured (TOKENIZER), a real BPE vocabulary included.
import { describe, expect, it } from "vitest";
import type { Message, Run } from "../../src/generated/prisma/client.js";
import { tiktokenTokenizer } from "../../src/runtime/adapters/tiktoken-tokenizer.js";
import { ContextBuilder, type BuildRequest } from "../../src/runtime/memory/context-builder.js";
import { estimatorFor, localEstimator, MESSAGE_OVERHEAD_TOKENS } from "../../src/runtime/memory/token-estimator.js";
import type { ChatMessage, ToolSchema } from "../../src/runtime/ports/model.js";
import type { Tokenizer } from "../../src/runtime/ports/tokenizer.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";

/** One token per character: easy to count by hand, and far from the estimator's 4 per token. */
const perCharacter: Tokenizer = { name: "per-character", count: (text) => [...text].length };

const GOAL = "Which EU cell plants slip to 2028?";
const log: Message[] = [
  {
    id: "m1",
    conversationId: "c1",
    seq: 1,
    role: "USER",
    content: GOAL,
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    runId: "r1",
    createdAt: new Date(0),
  },
];

async function budgetWith(tokenizer?: Tokenizer) {
  const builder = new ContextBuilder({ model: new ScriptedModel({ name: "budget", steps: [] }), tokenizer });
  // Nothing is folded at this size, so no trace or transaction is touched.
  const request = { run: { id: "r1" } as Run, log, systemPrompt: "You research.", tools: [] } as unknown as BuildRequest;
  return (await builder.build(request)).budget;
}

describe("the tokenizer port", () => {
  it("counts with the local estimator when no tokenizer is plugged in", async () => {
    expect(estimatorFor(undefined)).toBe(localEstimator);
    const budget = await budgetWith();
    expect(budget.systemPromptTokens).toBe(MESSAGE_OVERHEAD_TOKENS + 4); // 13 characters → 4
    expect(budget.currentInputTokens).toBe(MESSAGE_OVERHEAD_TOKENS + 9); // 34 characters → 9
  });

  it("makes the context budget count through a plugged-in tokenizer", async () => {
    const budget = await budgetWith(perCharacter);
    expect(budget.systemPromptTokens).toBe(MESSAGE_OVERHEAD_TOKENS + "You research.".length);
    expect(budget.currentInputTokens).toBe(MESSAGE_OVERHEAD_TOKENS + GOAL.length);
    expect(budget.estimate).toBe(budget.fixedOverhead + budget.historyTokens + budget.summaryTokens);
  });

  it("frames messages and tool calls as the estimator does, and counts JSON as it is (no +15 %)", () => {
    const estimator = estimatorFor(perCharacter);
    const messages: ChatMessage[] = [
      { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "search", arguments: '{"q":"cells"}' }] },
      { role: "tool", toolCallId: "c1", content: '{"hits":3}' },
    ];
    expect(estimator.messages(messages)).toBe(4 + 6 + 13 + (4 + 10));
    const tools: ToolSchema[] = [{ name: "search", description: "Search", parameters: { type: "object" } }];
    expect(estimator.tools(tools)).toBe(JSON.stringify(tools).length);
    expect(estimator.tools([])).toBe(0);
  });

  it("counts exactly with a BPE vocabulary shipped with js-tiktoken", () => {
    const o200k = tiktokenTokenizer("o200k_base");
    const cl100k = tiktokenTokenizer("cl100k_base");
    expect(o200k.count("hello world")).toBe(2);
    expect(cl100k.count("hello world")).toBe(2);
    expect(o200k.count("")).toBe(0);
    // A special token's text is text, not a refusal or a control token.
    expect(o200k.count("<|endoftext|>")).toBeGreaterThan(1);
    // The vocabularies differ, so which one is configured matters.
    const chinese = "电池工厂的产能预计将推迟到二零二八年。";
    expect(o200k.count(chinese)).not.toBe(cl100k.count(chinese));
  });
});
