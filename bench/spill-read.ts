// JSON-path read-back of a 5+ MB spilled tool result (R11): read_spill `$[3:6]` through the item
// index the spill keeps, against the baseline of reading the whole stored result and parsing it,
// measured in the same run on the same database. The spill is made the real way: a run whose
// tool returns 5 MB of JSON, executed by the runtime. Measures on the embedded database, and on
// a throw-away PostgreSQL database too when TEST_POSTGRES_URL (default 127.0.0.1:5432) answers.
//   npm run bench:spill
import { unfenced } from "../src/domain/transaction.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "../sdk/client.js";
import { AdmitRunDocument } from "../sdk/generated/graphql.js";
import { createApp } from "../src/compose/app.js";
import { openDatabase } from "../src/db/open-database.js";
import { createEventBus } from "../src/events/topics.js";
import { createLogger, silentLogger } from "../src/logger.js";
import type { Tool } from "../src/runtime/ports/tool.js";
import { planSpill } from "../src/runtime/spill/spill-plan.js";
import { createReadSpillTool } from "../src/runtime/tools/read-spill.js";
import { ScriptedModel } from "../src/runtime/adapters/scripted-model.js";
import { DEFAULT_SPILL_POLICY } from "../src/runtime/spill/spill-policy.js";
import type { Database } from "../src/db/open-database.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { percentile } from "./support.js";

const ROUNDS = 50;
const records = Array.from({ length: 52_000 }, (_, i) => ({ id: i, name: `record ${i} — Zürich`, body: "x".repeat(60) }));
const bigJson = JSON.stringify(records);

const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

async function time(rounds: number, work: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 3; i += 1) await work(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < rounds; i += 1) {
    const start = performance.now();
    await work();
    times.push(performance.now() - start);
  }
  return times;
}

async function measure(label: string, db: Database): Promise<void> {
  await db.migrate();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let reached!: () => void;
  const waiting = new Promise<void>((resolve) => (reached = resolve));
  const tools: Tool[] = [
    { schema: { name: "big_json", description: "5 MB", parameters: { type: "object" } }, execute: async () => bigJson },
    { schema: { name: "wait", description: "holds the run", parameters: { type: "object" } }, execute: async () => (reached(), await held, "ok") },
  ];
  const model = new ScriptedModel({
    name: "bench",
    steps: [{ toolCalls: [{ name: "big_json", arguments: {} }] }, { toolCalls: [{ name: "wait", arguments: {} }] }, { content: "done" }],
  });
  const app = createApp({
    db,
    events: createEventBus(),
    logger: process.env.BENCH_LOGS ? createLogger("debug") : silentLogger,
    authRequired: false,
    runtime: { model, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-bench-")), extraTools: tools },
  });
  const client = createClient({
    url: "http://bench/graphql",
    fetch: (async (input: string, init?: RequestInit) => app.yoga.fetch(new Request(input, init))) as typeof fetch,
  });
  const admitted = await client.request(AdmitRunDocument, { input: { question: "bench" } });
  if (admitted.admitRun.__typename !== "AdmitRunSuccess") throw new Error("admission failed");
  await waiting;

  const store = app.runtime!.spills;
  const [spill] = await app.db.prisma.spill.findMany({ select: { handle: true } });
  const info = (await store.find(spill!.handle))!;
  const readSpill = createReadSpillTool({ store, maxBytes: 16_384 });
  const context = {
    run: await app.db.prisma.run.findFirstOrThrow(),
    runId: info.runId,
    toolCallId: "bench",
    signal: new AbortController().signal,
    span: { id: "bench", traceId: "bench" },
    write: unfenced(app.db.prisma),
  };
  const expected = JSON.stringify(records.slice(3, 6));
  const indexed = await time(ROUNDS, async () => {
    const reply = await readSpill.execute({ handle: info.handle, jsonPath: "$[3:6]" }, context);
    if (!reply.endsWith(expected)) throw new Error("wrong items");
  });
  const whole = await time(ROUNDS, async () => {
    const content = (await app.db.prisma.message.findUniqueOrThrow({ where: { id: info.messageId }, select: { content: true } })).content;
    const items = (JSON.parse(content) as unknown[]).slice(3, 6);
    if (JSON.stringify(items) !== expected) throw new Error("wrong items");
  });
  const spillTimes: number[] = [];
  for (let i = 0; i < 10; i += 1) {
    const start = performance.now();
    planSpill({ output: bigJson, toolName: "big_json", handle: "h", policy: DEFAULT_SPILL_POLICY });
    spillTimes.push(performance.now() - start);
  }

  console.log(
    `JSON-path read of items 3–5 from a ${(Buffer.byteLength(bigJson) / 1e6).toFixed(1)} MB spill (${records.length} items), ${ROUNDS} reads, ${label}`,
  );
  console.log(`  read_spill $[3:6] via the item index   p50 ${fmt(percentile(indexed, 50))}  p99 ${fmt(percentile(indexed, 99))}`);
  console.log(`  baseline: read whole result + parse   p50 ${fmt(percentile(whole, 50))}  p99 ${fmt(percentile(whole, 99))}`);
  console.log(`  ratio (baseline / indexed, p50)        ${(percentile(whole, 50) / percentile(indexed, 50)).toFixed(1)}×`);
  console.log(`  goal: indexed p50 under 50 ms          ${percentile(indexed, 50) < 50 ? "met" : "NOT met"}`);
  console.log(`  one-time cost at spill (index + preview) p50 ${fmt(percentile(spillTimes, 50))}`);

  release();
  await app.stop();
  await db.close();
}

async function main(): Promise<void> {
  await measure("PGlite (embedded)", await openDatabase({ kind: "pglite" }));
  const adminUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
  const created = await createPostgresDatabaseAt(adminUrl, "dossier_bench").catch(() => null);
  if (!created) return console.log(`PostgreSQL at ${adminUrl} is not reachable: skipped`);
  try {
    await measure("PostgreSQL", await openDatabase({ kind: "postgres", url: created.url }));
  } finally {
    await created.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
