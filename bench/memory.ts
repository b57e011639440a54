// Context building with progressive memory (R4, R5, R8): the time to build one model request from
// a 500-message session holding 50 large tool results (and 50 large tool-call arguments), and the
// tokens micro-compaction saves — next to a baseline measured in the same run: building the same
// request without compaction (the log as chat messages plus the budget breakdown). Pure CPU, no
// database and no model call: a summary (R6) is only proposed here, it would cost a model call.
//   npm run bench:memory
import type { Message } from "../src/generated/prisma/client.js";
import { computeBudget } from "../src/runtime/memory/budget.js";
import { MemoCache, planContext } from "../src/runtime/memory/context-plan.js";
import { toChatMessages } from "../src/runtime/memory/conversation-log.js";
import type { CompactionPolicies } from "../src/runtime/memory/micro-compaction.js";
import type { ToolSchema } from "../src/runtime/ports/model.js";

const MESSAGES = 500;
const LARGE_RESULTS = 50;
const LARGE_CHARS = 8_000;
const WINDOW = 128_000;
const ROUNDS = 200;
const SYSTEM = "You are a careful research agent. Cite evidence for every claim.";
const TOOLS: ToolSchema[] = ["query_order", "search", "write_note"].map((name) => ({
  name,
  description: `${name} tool`,
  parameters: { type: "object", properties: { q: { type: "string" } } },
}));

/** user, then (assistant with a call, tool result) pairs; every fifth turn has a large result and large arguments. */
function session(): Message[] {
  const log: Message[] = [];
  const add = (entry: Partial<Message>) =>
    log.push({
      id: `m${log.length + 1}`,
      conversationId: "c",
      seq: log.length + 1,
      role: "USER",
      content: "",
      toolCalls: null,
      toolCallId: null,
      toolName: null,
      runId: "r",
      createdAt: new Date(0),
      ...entry,
    });
  add({ content: "Why is payment for order ORD-2024-0117 stuck?" });
  let large = 0;
  for (let turn = 0; log.length < MESSAGES - 1; turn += 1) {
    const isLarge = turn % 5 === 0 && large < LARGE_RESULTS;
    if (isLarge) large += 1;
    const name = TOOLS[turn % TOOLS.length]!.name;
    const args = JSON.stringify({ q: isLarge ? `filter ${turn} `.repeat(LARGE_CHARS / 40) : `q${turn}` });
    add({ role: "ASSISTANT", content: `Looking at step ${turn}.`, toolCalls: [{ id: `c${turn}`, name, arguments: args }] });
    add({ role: "TOOL", toolCallId: `c${turn}`, toolName: name, content: isLarge ? JSON.stringify({ rows: "r".repeat(LARGE_CHARS) }) : `ok ${turn}` });
  }
  add({ role: "ASSISTANT", content: "Summarising what I found." });
  return log;
}

function baseline(log: Message[]) {
  const history = toChatMessages(log);
  return computeBudget({ contextWindow: WINDOW, systemPrompt: SYSTEM, tools: TOOLS, currentInput: [], history });
}

function time(fn: () => void): { median: number; p95: number } {
  for (let i = 0; i < 20; i += 1) fn();
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i += 1) {
    const start = performance.now();
    fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(ROUNDS / 2)]!, p95: samples[Math.floor(ROUNDS * 0.95)]! };
}

const log = session();
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;
const base = baseline(log);
const baseTime = time(() => baseline(log));
console.log(`session: ${log.length} messages, ${LARGE_RESULTS} large results and arguments of ~${LARGE_CHARS} characters, window ${WINDOW}`);
console.log(
  `baseline (no compaction):        median ${fmt(baseTime.median)}, p95 ${fmt(baseTime.p95)}; request ~${base.estimate} tokens (effective window ${base.effectiveWindow})`,
);

for (const [label, policies] of [
  ["stale (default)", { "*": "stale" }],
  ["always", { "*": "always" }],
] as [string, CompactionPolicies][]) {
  const plan = planContext({ systemPrompt: SYSTEM, log, tools: TOOLS, contextWindow: WINDOW, policies });
  const cold = time(() => planContext({ systemPrompt: SYSTEM, log, tools: TOOLS, contextWindow: WINDOW, policies }));
  const cache = new MemoCache();
  const warm = time(() => planContext({ systemPrompt: SYSTEM, log, tools: TOOLS, contextWindow: WINDOW, policies, cache }));
  const saved = plan.stats.tokensBefore - plan.stats.tokensAfter;
  console.log(
    `micro-compaction, ${label.padEnd(15)} cold median ${fmt(cold.median)} (p95 ${fmt(cold.p95)}), ${(cold.median / baseTime.median).toFixed(2)}× baseline; ` +
      `warm cache median ${fmt(warm.median)} (p95 ${fmt(warm.p95)}), ${(warm.median / baseTime.median).toFixed(2)}× baseline`,
  );
  console.log(
    `  tokens: ${plan.stats.tokensBefore} → ${plan.stats.tokensAfter} (saved ${saved}, ${((100 * saved) / plan.stats.tokensBefore).toFixed(1)}%), ` +
      `${plan.stats.evidenceCleared.length} evidence ids cleared, over trigger: ${plan.budget.overTrigger}, fold proposed: ${plan.fold ? `${plan.fold.turns} turns` : "no"}`,
  );
}
