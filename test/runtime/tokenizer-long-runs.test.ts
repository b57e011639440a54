// R9: with TOKENIZER=o200k_base or cl100k_base, the budget counts every message with a BPE
// vocabulary, a fetched page, an MCP result or a model reply of 32,000 characters included. A long
// run without a break (Han text without punctuation, a run of one letter) must be counted in time
// linear in its length — the worker counts for every principal it serves — and every text gets
// exactly the count js-tiktoken's own encoder gives.
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import { tiktokenTokenizer, type BpeEncoding } from "../../src/runtime/adapters/tiktoken-tokenizer.js";

const require = createRequire(import.meta.url);
const ENCODINGS: BpeEncoding[] = ["o200k_base", "cl100k_base"];
const HAN = "研究报告显示电池产能扩张迅速欧洲市场需求持续增长";
const han = (length: number) => HAN.repeat(Math.ceil(length / HAN.length)).slice(0, length);

/** Dossier's tokenizer for each vocabulary, read once for the file. */
const tokenizers = new Map(ENCODINGS.map((encoding) => [encoding, tiktokenTokenizer(encoding)]));

/** js-tiktoken's own count, special-token look-alikes as text. Quadratic in a long run: short texts only. */
function referenceCounter(encoding: BpeEncoding) {
  const encoder = new Tiktoken(require(`js-tiktoken/ranks/${encoding}`) as TiktokenBPE);
  return (text: string) => encoder.encode(text, [], []).length;
}

/** Ordinary text: prose, CJK prose, JSON, code, a URL, mixed scripts, emoji, special-token look-alikes. */
const ORDINARY = [
  "European battery cell capacity announced for 2027 adds up to roughly 1.2 TWh, but less than half of it is financed.",
  "Plant X in Saxony has slipped to 2028 after its anchor customer renegotiated volumes; plant Y in Navarra is on schedule.",
  "萨克森州的工厂因主要客户重新谈判采购量而推迟到二零二八年；纳瓦拉的工厂仍按计划推进。供应商报价为每千瓦时九十欧元。",
  "欧洲の電池工場は二〇二七年までに稼働する予定ですが、資金調達が済んでいるのは半分以下です。배터리 공장은 지연되었습니다.",
  JSON.stringify({ order: { id: "ORD-2024-0117", items: [{ sku: "CELL-LFP-280", qty: 16 }], payment: { state: "PENDING_REVIEW" } } }),
  "export function tiktokenTokenizer(encoding: BpeEncoding): Tokenizer {\n\treturn { name: encoding, count: (text) => 0 };\n}\n",
  "https://example.org/plants/1017?lang=en&q=Donaudampfschifffahrtsgesellschaftskapitän#section-2",
  "Ünïcödé façade — naïve café, 👍🏽 ok 😀😀, x\u0301y\u0301, \r\n\r\n   indented\ttabs  \n",
  "<|endoftext|> is text here, and so is <|endofprompt|>; it's they'll we'd I'M YOU'RE",
  "",
];

/** Deterministic random texts over an alphabet that mixes scripts, cases, digits, whitespace, marks, emoji and a lone surrogate. */
function randomTexts(count: number): string[] {
  const alphabet = [..."aaaeeioounrst  ,.!?'\n\t\r0123456789ABZéüß中文电池ひらがなカタカナ한국어😀👍🏽\u0301{}[]\":/<|>_-عربي", "\uD800"];
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  return Array.from({ length: count }, () => {
    const length = 1 + Math.floor(next() * 160);
    return Array.from({ length }, () => alphabet[Math.floor(next() * alphabet.length)]).join("");
  });
}

describe("counting with a BPE vocabulary", () => {
  it.each(ENCODINGS)("gives js-tiktoken's exact counts, for ordinary and mixed text and for short runs without a break (%s)", (encoding) => {
    const tokenizer = tokenizers.get(encoding)!;
    const reference = referenceCounter(encoding);
    const ordinary = [...ORDINARY, ORDINARY.join("\n\n").repeat(20), ...randomTexts(200)];
    expect(ordinary.map((text) => tokenizer.count(text))).toEqual(ordinary.map(reference));
    const runs = [han(200), "a".repeat(500), "A".repeat(300), " ".repeat(400) + "x", "!".repeat(400), "😀".repeat(100), "\n".repeat(300)];
    expect(runs.map((text) => tokenizer.count(text))).toEqual(runs.map(reference));
  });

  // The same counts on texts that took js-tiktoken's encoder minutes; generous bounds for a shared machine.
  const long = [
    { what: '32,000 "a"', text: "a".repeat(32_000), tokens: { o200k_base: 4000, cl100k_base: 4000 } },
    { what: "32,000 Han characters without punctuation", text: han(32_000), tokens: { o200k_base: 21_333, cl100k_base: 42_667 } },
  ];
  for (const { what, text, tokens } of long) {
    it.each(ENCODINGS)(`counts ${what} in well under 2 seconds (%s)`, (encoding) => {
      const tokenizer = tokenizers.get(encoding)!;
      tokenizer.count("read the vocabulary");
      const started = performance.now();
      expect(tokenizer.count(text)).toBe(tokens[encoding]);
      expect(performance.now() - started).toBeLessThan(2000);
    });
  }
});
