// Live-trace latency: from an event being recorded to a subscriber receiving it, p50 and p99,
// on one instance, across two instances (Redis), and with 1,000 subscribers on one trace —
// each next to a baseline measured in the same run: a bare `ws` server pushing a message to a
// bare client on the same machine. Needs PostgreSQL and Redis (TEST_POSTGRES_URL, TEST_REDIS_URL).
//   npm run bench
import { spawn } from "node:child_process";
import { WebSocket, WebSocketServer } from "ws";
import { createClient } from "../sdk/client.js";
import { AdmitRunDocument } from "../sdk/generated/graphql.js";
import { createRedisEventBus } from "../src/events/redis-event-target.js";
import { createEventBus, type EventBus } from "../src/events/topics.js";
import { PrismaTraceRecorder } from "../src/trace/record/prisma-trace-recorder.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { type BenchServer, percentile, printTable, startBenchServer } from "./support.js";

const EVENTS = 200;
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const redisUrl = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

/** Baseline: a bare ws server pushing one message at a time to a bare client. */
async function baseline(): Promise<number[]> {
  const server = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as { port: number };
  const connected = new Promise<import("ws").WebSocket>((resolve) => server.once("connection", resolve));
  const client = new WebSocket(`ws://127.0.0.1:${port}`);
  const socket = await connected;
  const latencies: number[] = [];
  for (let i = 0; i < EVENTS; i += 1) {
    const received = new Promise<void>((resolve) => client.once("message", () => resolve()));
    const start = performance.now();
    socket.send(JSON.stringify({ seq: i, payload: "x".repeat(200) }));
    await received;
    latencies.push(performance.now() - start);
  }
  client.close();
  server.close();
  return latencies;
}

type Instance = BenchServer;
const instance = (url: string, events: EventBus, onClose?: () => Promise<void>) => startBenchServer({ kind: "postgres", url }, events, onClose);

/** A run on `writer` whose trace the benchmark writes to directly. */
async function benchRun(writer: Instance) {
  const client = createClient({ url: writer.server.url });
  const admitted = await client.request(AdmitRunDocument, { input: { question: "bench" } });
  if (admitted.admitRun.__typename !== "AdmitRunSuccess") throw new Error("admission failed");
  const runGlobalId = admitted.admitRun.run.id;
  const runId = Buffer.from(runGlobalId, "base64").toString("utf8").split(":")[1]!;
  const recorder = new PrismaTraceRecorder({ prisma: writer.app.db.prisma, events: writer.app.events });
  const span = await recorder.startSpan({ traceId: await recorder.traceFor(runId), kind: "RUN", name: "bench" });
  return { client, runGlobalId, recorder, span };
}

/** Records EVENTS events on `writer` and measures when `subscribers` receive each over graphql-ws. */
async function measure(writer: Instance, reader: Instance, subscribers: number): Promise<{ latencies: number[]; memoryMb: number }> {
  const { client, runGlobalId, recorder, span } = await benchRun(writer);

  global.gc?.();
  const memoryBefore = process.memoryUsage().rss;
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  const pending = new Map<number, number>();
  let resolveRound: (() => void) | undefined;
  const readers = Array.from({ length: Math.ceil(subscribers / 500) }, () => createClient({ url: reader.server.url, wsUrl: reader.server.wsUrl }));
  const ready: Promise<unknown>[] = [];
  for (let i = 0; i < subscribers; i += 1) {
    const stream = readers[i % readers.length]!.traceUpdates(runGlobalId, { afterSeq: "1" });
    ready.push(
      (async () => {
        for await (const update of stream) {
          if (update.kind !== "EVENT_APPENDED") continue;
          const seq = Number(update.seq);
          latencies.push(performance.now() - sentAt.get(seq)!);
          const left = (pending.get(seq) ?? subscribers) - 1;
          pending.set(seq, left);
          if (left === 0) resolveRound?.();
        }
      })(),
    );
  }
  // Let every subscription reach the server before the first event.
  await new Promise((resolve) => setTimeout(resolve, Math.max(500, subscribers * 3)));
  const memoryMb = (process.memoryUsage().rss - memoryBefore) / 1024 / 1024;
  for (let i = 0; i < EVENTS; i += 1) {
    const round = new Promise<void>((resolve) => (resolveRound = resolve));
    const start = performance.now();
    const seq = await recorder.event(span, "THINKING", "x".repeat(200));
    sentAt.set(seq, start);
    await round;
  }
  await recorder.endTrace(span.traceId);
  await Promise.allSettled(ready);
  await Promise.all(readers.map((r) => r.close()));
  await client.close();
  return { latencies, memoryMb };
}

/**
 * 1,000 subscribers in a separate process: the server's process records events, the child
 * receives them; latency = child's receive time − parent's record-call time (one machine clock).
 */
async function measureRemote(writer: Instance, subscribers: number): Promise<{ latencies: number[]; memoryMb: number }> {
  const { client, runGlobalId, recorder, span } = await benchRun(writer);
  await recorder.event(span, "THINKING", "warm-up"); // every subscriber gets one update to say it is ready
  global.gc?.();
  const memoryBefore = process.memoryUsage().rss;
  const child = spawn(process.execPath, ["--import", "tsx", "bench/subscribers.ts", writer.server.url, runGlobalId, String(subscribers)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  while (!output.includes("READY\n")) await new Promise((resolve) => setTimeout(resolve, 50));
  const memoryMb = (process.memoryUsage().rss - memoryBefore) / 1024 / 1024;
  const sentAt = new Map<number, number>();
  for (let i = 0; i < EVENTS; i += 1) {
    const start = performance.timeOrigin + performance.now();
    sentAt.set(await recorder.event(span, "THINKING", "x".repeat(200)), start);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await recorder.endTrace(span.traceId);
  await new Promise((resolve) => child.once("exit", resolve));
  const received = JSON.parse(output.split("\n").filter(Boolean).at(-1)!) as Record<string, number[]>;
  const latencies = Object.entries(received).flatMap(([seq, times]) => (sentAt.has(Number(seq)) ? times.map((time) => time - sentAt.get(Number(seq))!) : []));
  await client.close();
  return { latencies, memoryMb };
}

async function main(): Promise<void> {
  const base = await baseline();
  const baseP50 = percentile(base, 50);
  const rows: string[][] = [["scenario", "p50", "p99", "p50 ÷ baseline p50", "extra memory"]];
  rows.push(["baseline: bare ws push, one message", fmt(baseP50), fmt(percentile(base, 99)), "1.0", "—"]);

  const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench");
  try {
    const single = await instance(database.url, createEventBus());
    const one = await measure(single, single, 1);
    rows.push(latencyRow("one instance, 1 subscriber", one.latencies, baseP50, "—"));
    const many = await measureRemote(single, 1_000);
    rows.push(
      latencyRow(
        "one instance, 1,000 subscribers (another process)",
        many.latencies,
        baseP50,
        `${many.memoryMb.toFixed(0)} MB server-side for 1,000 subscriptions`,
      ),
    );
    await single.close();

    const busA = await createRedisEventBus(redisUrl);
    const busB = await createRedisEventBus(redisUrl);
    const a = await instance(database.url, busA.events, busA.close);
    const b = await instance(database.url, busB.events, busB.close);
    const two = await measure(a, b, 1);
    rows.push(latencyRow("two instances via Redis, 1 subscriber", two.latencies, baseP50, "—"));
    await a.close();
    await b.close();
  } finally {
    await database.drop();
  }
  printTable(rows);
  console.log(`\n${EVENTS} events per scenario; latency = recorder.event() called → update received by the subscriber.`);
}

await main();
process.exit(0);

/** A table row: the scenario, its p50 and p99, p50 against the baseline's, and what else it cost. */
function latencyRow(scenario: string, latencies: number[], baseP50: number, extra: string): string[] {
  return [scenario, fmt(percentile(latencies, 50)), fmt(percentile(latencies, 99)), (percentile(latencies, 50) / baseP50).toFixed(1), extra];
}
