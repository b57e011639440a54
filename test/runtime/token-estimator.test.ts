// R9: the local token estimator — 4 characters per token for Latin, 2 for CJK, +15% for JSON
// (other scripts and symbols: token-estimator-scripts.test.ts).
import { describe, expect, it } from "vitest";
import type { ChatMessage, ToolSchema } from "../../src/runtime/ports/model.js";
import {
  MESSAGE_OVERHEAD_TOKENS,
  estimateJsonTokens,
  estimateMessageTokens,
  estimateMessagesTokens,
  estimateTextTokens,
  estimateToolSchemasTokens,
  localEstimator,
} from "../../src/runtime/memory/token-estimator.js";

describe("estimateTextTokens", () => {
  it("is 0 for the empty string", () => {
    expect(estimateTextTokens("")).toBe(0);
  });

  it("counts Latin text at about 4 characters per token, rounding up", () => {
    expect(estimateTextTokens("abcd".repeat(25))).toBe(25);
    expect(estimateTextTokens("a")).toBe(1);
    expect(estimateTextTokens("abcde")).toBe(2);
    const sentence = "Map EU battery cell capacity for 2027, by country and by plant.";
    expect(estimateTextTokens(sentence)).toBe(Math.ceil(sentence.length / 4));
  });

  it("counts CJK text at about 2 characters per token: Han, Kana, Hangul, CJK and fullwidth punctuation", () => {
    expect(estimateTextTokens("你好世界")).toBe(2);
    expect(estimateTextTokens("日本語のテキスト")).toBe(4); // Han + Hiragana + Katakana
    expect(estimateTextTokens("안녕하세요")).toBe(3); // 5 Hangul syllables → 2.5 → 3
    expect(estimateTextTokens("。、「」")).toBe(2); // CJK Symbols and Punctuation
    expect(estimateTextTokens("！？ＡＢ")).toBe(2); // Halfwidth and Fullwidth Forms
    const paragraph = "电池产能预计在二零二七年大幅增长。".repeat(10);
    expect(estimateTextTokens(paragraph)).toBe(Math.ceil([...paragraph].length / 2));
  });

  it("adds the two rates for mixed text", () => {
    expect(estimateTextTokens("Hello 世界")).toBe(3); // 6 Latin (1.5) + 2 CJK (1) = 2.5 → 3
    expect(estimateTextTokens("abcd你好")).toBe(2); // 1 + 1
  });

  it("counts by code point, so surrogate pairs are one character", () => {
    const emoji = "😀".repeat(8);
    expect(emoji.length).toBe(16);
    expect(estimateTextTokens(emoji)).toBe(24); // 3 tokens per emoji, not per UTF-16 unit
    const extensionB = "𠀀𠀁"; // supplementary Han ideographs: CJK, one code point each
    expect(extensionB.length).toBe(4);
    expect(estimateTextTokens(extensionB)).toBe(1);
  });

  it("never decreases as text grows", () => {
    const pieces = ["a", "漢", "😀", " ", "か", "{", "한", "x"];
    let text = "";
    let previous = 0;
    for (let i = 0; i < 400; i += 1) {
      text += pieces[(i * 7) % pieces.length];
      const tokens = estimateTextTokens(text);
      expect(tokens).toBeGreaterThanOrEqual(previous);
      previous = tokens;
    }
    expect(previous).toBeGreaterThan(0);
  });
});

describe("estimateJsonTokens", () => {
  it("adds 15% to the text estimate of JSON text, rounding up", () => {
    const json = JSON.stringify({ query: "x".repeat(68) }); // 80 characters → 20 → 23
    expect(json.length).toBe(80);
    expect(estimateJsonTokens(json)).toBe(23);
    expect(estimateJsonTokens('{"a":1}')).toBe(3); // 7 characters → 2 → 2.3 → 3
  });

  it("serializes non-string values first", () => {
    const value = { results: [{ id: "e7f3a", title: "Cell plants", capacityGWh: 40 }], total: 1 };
    expect(estimateJsonTokens(value)).toBe(estimateJsonTokens(JSON.stringify(value)));
    expect(estimateJsonTokens(value)).toBe(Math.ceil(estimateTextTokens(JSON.stringify(value)) * 1.15));
  });

  it("is 0 for values that serialize to nothing", () => {
    expect(estimateJsonTokens(undefined)).toBe(0);
    expect(estimateJsonTokens("")).toBe(0);
  });
});

describe("message and tool estimates", () => {
  it("counts content plus a fixed per-message overhead", () => {
    expect(MESSAGE_OVERHEAD_TOKENS).toBe(4);
    expect(estimateMessageTokens({ role: "user", content: "abcd".repeat(10) })).toBe(14);
    expect(estimateMessageTokens({ role: "tool", toolCallId: "call_1", content: "" })).toBe(4);
  });

  it("counts each tool call's name and JSON arguments (+15%)", () => {
    const message: ChatMessage = {
      role: "assistant",
      content: null,
      toolCalls: [
        { id: "call_1", name: "search", arguments: '{"q":"battery"}' }, // name 2 + args ceil(4 × 1.15) = 5
        { id: "call_2", name: "read", arguments: "{}" }, // name 1 + args ceil(1 × 1.15) = 2
      ],
    };
    expect(estimateMessageTokens(message)).toBe(4 + 2 + 5 + 1 + 2);
  });

  it("counts a tool result in JSON as JSON (+15%), and any other result as text", () => {
    const json = JSON.stringify({ rows: [{ plant: "X", year: 2028 }], note: "x".repeat(34) }); // 80 characters → 20 → 23
    expect(json.length).toBe(80);
    expect(estimateMessageTokens({ role: "tool", toolCallId: "call_1", content: json })).toBe(4 + 23);
    expect(estimateMessageTokens({ role: "tool", toolCallId: "call_1", content: ` ${JSON.stringify([1, 2, 3])}\n` })).toBe(4 + 4); // 9 characters → 3 → ceil(3.45) = 4
    // Prose, or text that only looks like JSON at its ends, is text.
    const prose = "Plant X slips to 2028; plant Y holds. ".repeat(2).padEnd(80, ".");
    expect(estimateMessageTokens({ role: "tool", toolCallId: "call_1", content: prose })).toBe(4 + 20);
    expect(
      estimateMessageTokens({
        role: "tool",
        toolCallId: "call_1",
        content: "{not json at all, only braces..................................................}",
      }),
    ).toBe(4 + 20);
    // The rule is for tool results: the same JSON sent by the user is counted as text.
    expect(estimateMessageTokens({ role: "user", content: json })).toBe(4 + 20);
  });

  it("sums messages", () => {
    const messages: ChatMessage[] = [
      { role: "system", content: "abcd".repeat(100) },
      { role: "user", content: "你好" },
      { role: "assistant", content: "ok" },
    ];
    expect(estimateMessagesTokens(messages)).toBe(104 + 5 + 5);
    expect(estimateMessagesTokens([])).toBe(0);
  });

  it("counts tool schemas as JSON, and no tools as 0", () => {
    const tools: ToolSchema[] = [{ name: "search", description: "Search the web", parameters: { type: "object", properties: { q: { type: "string" } } } }];
    expect(estimateToolSchemasTokens(tools)).toBe(estimateJsonTokens(tools));
    expect(estimateToolSchemasTokens([])).toBe(0);
  });

  it("exposes the local estimator through the pluggable interface", () => {
    const messages: ChatMessage[] = [{ role: "user", content: "Map EU battery cell capacity" }];
    expect(localEstimator.text("abcdefgh")).toBe(2);
    expect(localEstimator.messages(messages)).toBe(estimateMessagesTokens(messages));
    expect(localEstimator.tools([])).toBe(0);
  });
});
