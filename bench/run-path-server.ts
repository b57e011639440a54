// A Dossier server with its in-process worker, for bench/run-path.ts, in its own process so that
// its CPU time is its own: on the database named by argv[2] ("pglite" or a PostgreSQL URL), its
// runs asking the OpenAI-protocol model server at argv[3]. Prints `listening <url> <wsUrl>`;
// answers the IPC message "stats" with the CPU time used, the SQL statements and transactions sent
// so far and the trace records (spans and events) persisted. BENCH_SQL_SHAPES=<file>: on exit, the
// statements sent, counted by their first 90 characters; BENCH_SQL_SEQUENCE=<file>: each one's
// first 70 (BENCH_SQL_FULL=1: whole), in the order sent. BENCH_TURN_TIMELINE=<file>: on exit, when
// each statement of a turn was sent and each model request made (bench/turn-timeline.ts).
import { mkdtempSync, writeFileSync } from "node:fs";
import { Agent, type ClientRequest } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { createApp } from "../src/compose/app.js";
import { openDatabase } from "../src/db/open-database.js";
import { createEventBus } from "../src/events/topics.js";
import { createLogger, silentLogger } from "../src/logger.js";
import { OpenAIModel } from "../src/runtime/adapters/openai-model.js";
import { startHttpServer } from "../src/server/http-server.js";
import { serverTimeline, statementKind } from "./turn-timeline.js";

const [target = "pglite", modelURL] = process.argv.slice(2);
if (!modelURL) throw new Error("usage: run-path-server.ts <pglite|postgres url> <model base URL>");
let statements = 0;
let transactions = 0;
const sequence = process.env.BENCH_SQL_SEQUENCE ? ([] as string[]) : undefined;
const shapes = process.env.BENCH_SQL_SHAPES ? new Map<string, number>() : undefined;
const timeline = process.env.BENCH_TURN_TIMELINE ? serverTimeline() : undefined;
if (timeline) {
  // The model's requests go out through node:http's agent (src/runtime/adapters/model-http.ts);
  // anything else the adapter sends through the global fetch.
  const model = new URL(modelURL);
  // Agent.addRequest is node:http's own (not in its typings): every request made through an agent goes by it.
  type Adding = (this: Agent, request: ClientRequest, options: { host?: string; port?: number | string }) => void;
  const agent = Agent.prototype as unknown as { addRequest: Adding };
  const adding = agent.addRequest;
  agent.addRequest = function (request, options) {
    if (options.host === model.hostname && String(options.port) === model.port) timeline.note("request");
    return adding.call(this, request, options);
  };
  const fetching = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    if (String(input instanceof Request ? input.url : input).startsWith(modelURL)) timeline.note("request");
    return fetching(input, init);
  };
}

const db = await openDatabase(target === "pglite" ? { kind: "pglite" } : { kind: "postgres", url: target }, {
  onQuery: (sql) => {
    timeline?.note(statementKind(sql));
    if (sequence) sequence.push((process.env.BENCH_SQL_FULL ? sql : sql.slice(0, 70)).replace(/\s+/g, " "));
    if (shapes) shapes.set(sql.slice(0, 90), (shapes.get(sql.slice(0, 90)) ?? 0) + 1);
    if (/^\s*(COMMIT\b|-- Implicit "COMMIT")/i.test(sql)) transactions += 1;
    else if (!/^\s*(BEGIN|ROLLBACK\b|-- Implicit)/i.test(sql)) statements += 1;
  },
});
await db.migrate();
const app = createApp({
  db,
  events: createEventBus(),
  logger: process.env.BENCH_LOG ? createLogger("warn") : silentLogger,
  authRequired: false,
  runtime: {
    model: new OpenAIModel({ baseURL: modelURL, apiKey: "sk-bench", model: "bench-model", contextWindow: 64_000, maxRetries: 0 }),
    sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-bench-run-path-")),
    concurrency: 16,
    maxRunningPerPrincipal: 16,
  },
});
await app.services.agentProfiles.load();
const server = await startHttpServer({ app, port: 0, host: "127.0.0.1", maxSubscriptionsPerConnection: 1_000 });

process.on("message", (message) => {
  if (message !== "stats") return;
  const cpu = process.cpuUsage();
  void app.db.prisma
    .$queryRawUnsafe<{ records: string }[]>("SELECT coalesce(sum(records), 0)::text AS records FROM trace")
    .then(([row]) => process.send!({ kind: "stats", cpuMicros: cpu.user + cpu.system, statements, transactions, records: Number(row!.records) }));
});
process.stdout.write(`listening ${server.url} ${server.wsUrl}\n`);
process.on("SIGTERM", () => {
  if (shapes) {
    const lines = [...shapes].sort((a, b) => b[1] - a[1]).map(([sql, n]) => `${n}\t${sql.replace(/\s+/g, " ")}`);
    writeFileSync(process.env.BENCH_SQL_SHAPES!, lines.join("\n"));
  }
  if (timeline) writeFileSync(process.env.BENCH_TURN_TIMELINE!, timeline.text());
  if (sequence) writeFileSync(process.env.BENCH_SQL_SEQUENCE!, sequence.join("\n"));
  process.exit(0);
});
