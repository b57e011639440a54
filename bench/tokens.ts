// The local token estimator (R9) against real BPE tokenizers (js-tiktoken's o200k_base and
// cl100k_base vocabularies), in one run: per kind of sample — English prose, Chinese prose, JSON
// tool results — the estimator's relative error ((estimate − real) / real; positive means it
// over-counts, which the budget's safety buffer and 10 % trigger margin are for), and how many
// tokens each counts per millisecond, as a ratio; then how long the tokenizer takes over 32,000
// characters without a break (Han text without punctuation, one letter repeated), the longest
// result the budget counts inline.
//   npm run bench:tokens
import { tiktokenTokenizer } from "../src/runtime/adapters/tiktoken-tokenizer.js";
import { estimateMessageTokens, MESSAGE_OVERHEAD_TOKENS } from "../src/runtime/memory/token-estimator.js";
import type { Tokenizer } from "../src/runtime/ports/tokenizer.js";

const ENGLISH = [
  "European battery cell capacity announced for 2027 adds up to roughly 1.2 TWh, but less than half of it is financed. " +
    "Plant X in Saxony has slipped to 2028 after its anchor customer renegotiated volumes; plant Y in Navarra is on schedule.",
  "The supplier's price list quotes 90 EUR/kWh for LFP cells delivered in Q3, with a 4% surcharge for orders under 50 MWh. " +
    "Two of the three sources disagree on the ramp-up curve, so the estimate keeps both and marks the range as uncertain.",
  "Next steps: confirm the Saxony delay with the regional development agency, read the 2025 annual report of the operator, " +
    "and compare the announced capacity with grid-connection requests, which are public and harder to inflate.",
];

const CHINESE = [
  "欧洲计划在二零二七年前投产的电池工厂总产能约为一点二太瓦时，但其中只有不到一半已经获得融资。",
  "萨克森州的工厂因主要客户重新谈判采购量而推迟到二零二八年；纳瓦拉的工厂仍按计划推进。供应商报价为每千瓦时九十欧元。",
  "下一步：向地区发展署核实推迟的原因，阅读运营商二零二五年的年度报告，并将公布的产能与公开的电网接入申请进行比较。",
];

const JSON_RESULTS = [
  JSON.stringify({
    query: "EU battery cell plants 2027",
    hits: Array.from({ length: 12 }, (_, i) => ({
      title: `Plant ${String.fromCharCode(65 + i)} capacity update`,
      url: `https://example.org/plants/${1000 + i}?lang=en`,
      capacityGWh: 8 + i * 3.5,
      startYear: 2026 + (i % 3),
      financed: i % 2 === 0,
    })),
  }),
  JSON.stringify(
    Array.from({ length: 20 }, (_, i) => ({
      id: `ORD-2024-${String(117 + i).padStart(4, "0")}`,
      status: i % 4 === 0 ? "stuck" : "paid",
      amount: 1299.5 + i,
      currency: "EUR",
    })),
  ),
  JSON.stringify({
    order: {
      id: "ORD-2024-0117",
      items: [
        { sku: "CELL-LFP-280", qty: 16 },
        { sku: "BMS-48V", qty: 1 },
      ],
      payment: { state: "PENDING_REVIEW", attempts: 3, lastError: "issuer_timeout" },
    },
  }),
];

type Kind = { name: string; samples: string[]; asToolResult: boolean };
const KINDS: Kind[] = [
  { name: "English", samples: ENGLISH, asToolResult: false },
  { name: "Chinese", samples: CHINESE, asToolResult: false },
  { name: "JSON tool results", samples: JSON_RESULTS, asToolResult: true },
];

/** What the budget counts for a sample: a user message's text, or a tool's result (JSON +15 %), without the framing. */
function estimate(sample: string, asToolResult: boolean): number {
  const message = asToolResult ? { role: "tool" as const, toolCallId: "c1", content: sample } : { role: "user" as const, content: sample };
  return estimateMessageTokens(message) - MESSAGE_OVERHEAD_TOKENS;
}

/** Tokens counted per millisecond by `count` over the samples, repeated until ~200 ms have passed (after ~50 ms unmeasured, so both are compiled). */
function throughput(samples: string[], count: (sample: string) => number): number {
  for (const warmUp = performance.now(); performance.now() - warmUp < 50; ) for (const sample of samples) count(sample);
  let tokens = 0;
  const started = performance.now();
  let elapsed = 0;
  while (elapsed < 200) {
    for (const sample of samples) tokens += count(sample);
    elapsed = performance.now() - started;
  }
  return tokens / elapsed;
}

const pct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)} %`;

for (const tokenizer of [tiktokenTokenizer("o200k_base"), tiktokenTokenizer("cl100k_base")] as Tokenizer[]) {
  tokenizer.count("warm up"); // reads the vocabulary outside the measurements
  console.log(`\nestimator vs ${tokenizer.name}`);
  console.log("kind                 samples  real  estimate  relative error (total; worst sample)   tokens/ms estimator : tokenizer");
  for (const kind of KINDS) {
    const real = kind.samples.map((s) => tokenizer.count(s));
    const estimated = kind.samples.map((s) => estimate(s, kind.asToolResult));
    const [realSum, estSum] = [real.reduce((a, b) => a + b, 0), estimated.reduce((a, b) => a + b, 0)];
    const errors = real.map((r, i) => (estimated[i]! - r) / r);
    const worst = errors.reduce((w, e) => (Math.abs(e) > Math.abs(w) ? e : w), 0);
    const estimatorRate = throughput(kind.samples, (s) => estimate(s, kind.asToolResult));
    const tokenizerRate = throughput(kind.samples, (s) => tokenizer.count(s));
    console.log(
      `${kind.name.padEnd(20)} ${String(kind.samples.length).padStart(7)} ${String(realSum).padStart(5)} ${String(estSum).padStart(9)}  ` +
        `${pct((estSum - realSum) / realSum).padStart(9)} ; ${pct(worst).padStart(9)}                  ` +
        `${estimatorRate.toFixed(0).padStart(6)} : ${tokenizerRate.toFixed(0).padStart(6)}  (${(estimatorRate / tokenizerRate).toFixed(2)}×)`,
    );
  }
  const han = "研究报告显示电池产能扩张迅速欧洲市场需求持续增长";
  const runs = { "32,000 Han characters": han.repeat(1334).slice(0, 32_000), '32,000 "a"': "a".repeat(32_000) };
  for (const [what, text] of Object.entries(runs)) {
    const started = performance.now();
    const tokens = tokenizer.count(text);
    console.log(`${what.padEnd(22)} ${String(tokens).padStart(6)} tokens in ${(performance.now() - started).toFixed(0)} ms`);
  }
}
