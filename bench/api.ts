// API throughput with the server in the benchmark's own process (bench/server-costs.ts measures
// servers in their own processes, with their CPU, and trace-event writes), next to a baseline
// measured in the same run: a bare graphql-yoga server answering `{ hello }` on this machine,
// under the same load generator. Prints, for each scenario, requests per second and p99 latency
// and their ratio to the baseline:
//   - a typical workspace read (workspace + current goal + 20 linked runs), on PGlite and PostgreSQL
//   - run admission
//   - server memory at idle and with 1,000 open trace subscriptions
// Needs PostgreSQL (TEST_POSTGRES_URL, default postgresql://postgres@127.0.0.1:5432/postgres).
//   npm run bench
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createSchema, createYoga } from "graphql-yoga";
import { createClient } from "../sdk/client.js";
import { AdmitRunDocument, CreateWorkspaceDocument } from "../sdk/generated/graphql.js";
import type { DatabaseTarget } from "../src/db/open-database.js";
import { PrismaTraceRecorder } from "../src/trace/record/prisma-trace-recorder.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { percentile, printTable, TYPICAL_WORKSPACE_READ, startBenchServer } from "./support.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = 16;
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

type Load = { perSecond: number; p50: number; p99: number };

/** CONCURRENCY loops sending `request` back to back for SECONDS; every answer must be good. */
async function load(request: (i: number) => Promise<void>, seconds = SECONDS): Promise<Load> {
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const started = performance.now();
        await request(n++);
        latencies.push(performance.now() - started);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { perSecond: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function post(url: string, query: string, variables: Record<string, unknown> = {}): Promise<unknown> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query, variables }) });
  const body = (await response.json()) as { data?: unknown; errors?: unknown };
  if (!response.ok || body.errors) throw new Error(`request failed: ${JSON.stringify(body)}`);
  return body.data;
}

async function baseline(): Promise<Load> {
  const yoga = createYoga({
    schema: createSchema({ typeDefs: "type Query { hello: String! }", resolvers: { Query: { hello: () => "world" } } }),
    logging: false,
  });
  const server = createServer(yoga);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  const result = await load(() => post(url, "{ hello }").then(() => undefined));
  await new Promise((resolve) => server.close(resolve));
  return result;
}

async function apiScenarios(target: DatabaseTarget, label: string, rows: Row[], base: Load, more: boolean) {
  const instance = await startBenchServer(target);
  const client = createClient({ url: instance.server.url });
  const created = await client.request(CreateWorkspaceDocument, { input: { title: "Bench", goal: "Measure Dossier" } });
  if (created.createWorkspace.__typename !== "CreateWorkspaceSuccess") throw new Error("workspace");
  const workspaceId = created.createWorkspace.workspace.id;
  for (let i = 0; i < 20; i += 1) await client.request(AdmitRunDocument, { input: { workspaceId, question: `question ${i}` } });
  await load(() => post(instance.server.url, TYPICAL_WORKSPACE_READ, { id: workspaceId }).then(() => undefined), 1); // warm-up
  rows.push(
    row(
      `workspace + goal + 20 runs, ${label}`,
      await load(() => post(instance.server.url, TYPICAL_WORKSPACE_READ, { id: workspaceId }).then(() => undefined)),
      base,
    ),
  );
  if (more) {
    const admit = `mutation($input: AdmitRunInput!) { admitRun(input: $input) { __typename } }`;
    rows.push(
      row(
        `admitRun, ${label}`,
        await load((i) => post(instance.server.url, admit, { input: { workspaceId, question: `admitted ${i}` } }).then(() => undefined)),
        base,
      ),
    );
    const recorder = new PrismaTraceRecorder({ prisma: instance.app.db.prisma, events: instance.app.events });
    const watched = await client.request(AdmitRunDocument, { input: { question: "watched" } });
    if (watched.admitRun.__typename !== "AdmitRunSuccess") throw new Error("admit");
    const watchedRunId = Buffer.from(watched.admitRun.run.id, "base64").toString("utf8").split(":")[1]!;
    const watchedSpan = await recorder.startSpan({ traceId: await recorder.traceFor(watchedRunId), kind: "RUN", name: "watched" });
    global.gc?.();
    const idle = process.memoryUsage().rss;
    const child = spawn(process.execPath, ["--import", "tsx", "bench/subscribers.ts", instance.server.url, watched.admitRun.run.id, "1000"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await recorder.event(watchedSpan, "THINKING", "ready?");
    while (!output.includes("READY\n")) await new Promise((resolve) => setTimeout(resolve, 50));
    global.gc?.();
    const withSubscribers = process.memoryUsage().rss;
    rows.push([
      `server memory: idle → 1,000 open trace subscriptions, ${label}`,
      `${(idle / 2 ** 20).toFixed(0)} MB → ${(withSubscribers / 2 ** 20).toFixed(0)} MB`,
      `${withSubscribers >= idle ? "+" : "−"}${(Math.abs(withSubscribers - idle) / 2 ** 20).toFixed(0)} MB`,
      "—",
    ]);
    await recorder.endTrace(watchedSpan.traceId);
    await new Promise((resolve) => child.once("exit", resolve));
  }
  await client.close();
  await instance.close();
}

type Row = [string, string, string, string];
const row = (name: string, result: Load, base: Load): Row => [
  name,
  `${result.perSecond.toFixed(0)}/s`,
  `${result.p99.toFixed(1)} ms`,
  `${(result.perSecond / base.perSecond).toFixed(3)} × throughput, ${(result.p99 / base.p99).toFixed(1)} × p99`,
];

async function main(): Promise<void> {
  const base = await baseline();
  const rows: Row[] = [["scenario", "throughput", "p99", "against the baseline"]];
  rows.push(["baseline: bare graphql-yoga { hello }", `${base.perSecond.toFixed(0)}/s`, `${base.p99.toFixed(1)} ms`, "1"]);
  await apiScenarios({ kind: "pglite" }, "PGlite", rows, base, false);
  const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench_api");
  try {
    await apiScenarios({ kind: "postgres", url: database.url }, "PostgreSQL", rows, base, true);
  } finally {
    await database.drop();
  }
  printTable(rows);
  console.log(`\n${CONCURRENCY} concurrent clients, ${SECONDS} s per scenario, client and server on this machine.`);
}

await main();
process.exit(0);
