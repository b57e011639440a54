// Live model output (runOutput): how long after the model server writes a piece of the answer a
// subscriber receives it — the first piece of each answer above all, which should arrive within
// 100 ms — and how many frames coalescing sends for how many pieces. The model is a stub speaking
// the OpenAI streaming protocol in this process, so its write times and the subscriber's receive
// times are on one clock. On one instance, and across two instances via Redis. Needs PostgreSQL
// and Redis (TEST_POSTGRES_URL, TEST_REDIS_URL).
//   npm run bench:output
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "../sdk/client.js";
import { AdmitRunDocument, RunOutputDocument } from "../sdk/generated/graphql.js";
import { createApp } from "../src/compose/app.js";
import { openDatabase } from "../src/db/open-database.js";
import { createRedisEventBus } from "../src/events/redis-event-target.js";
import { createEventBus, type EventBus } from "../src/events/topics.js";
import { silentLogger } from "../src/logger.js";
import { OpenAIModel } from "../src/runtime/adapters/openai-model.js";
import { startHttpServer } from "../src/server/http-server.js";
import { startOpenAIStreamStub, type StubTurn } from "../test/support/openai-stream-stub.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { percentile, printTable } from "./support.js";

const RUNS = 20;
const PIECES = 40;
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const redisUrl = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

/** What the next run's answer is: its pieces, their pace, and when the stub may start writing. */
let nextTurn: StubTurn = { text: ["unused"] };

type Instance = { url: string; wsUrl: string; close(): Promise<void> };

async function startInstance(
  databaseUrl: string,
  events: EventBus,
  modelURL: string | undefined,
  onClose: () => Promise<void> = async () => undefined,
): Promise<Instance> {
  const db = await openDatabase({ kind: "postgres", url: databaseUrl });
  await db.migrate();
  const runtime = modelURL
    ? {
        model: new OpenAIModel({ baseURL: modelURL, apiKey: "sk-bench", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-bench-output-")),
      }
    : undefined;
  const app = createApp({ db, events, logger: silentLogger, authRequired: false, runtime });
  await app.services.agentProfiles.load();
  const server = await startHttpServer({ app, port: 0, host: "127.0.0.1" });
  return {
    url: server.url,
    wsUrl: server.wsUrl,
    async close() {
      await server.close();
      await app.stop();
      await db.close();
      await onClose();
    },
  };
}

type Measured = { first: number[]; pieces: number[]; frames: number; piecesSent: number };

/**
 * RUNS runs executed on `executor`, each watched from `watcher`: the stub holds the answer until the
 * subscription has been listening for 300 ms, then writes PIECES pieces `gapMs` apart.
 */
async function measure(executor: Instance, watcher: Instance, gapMs: number): Promise<Measured> {
  const admitting = createClient({ url: executor.url });
  const watching = createClient({ url: watcher.url, wsUrl: watcher.wsUrl });
  const result: Measured = { first: [], pieces: [], frames: 0, piecesSent: 0 };
  for (let run = 0; run < RUNS; run += 1) {
    let listening: () => void = () => undefined;
    const sentAt: number[] = [];
    const pieces = Array.from({ length: PIECES }, (_, i) => `tok${i} `);
    nextTurn = {
      text: pieces,
      gapMs,
      pause: { index: 0, until: new Promise<void>((resolve) => (listening = resolve)) },
      sent: (index, at) => (sentAt[index] = at),
    };
    const admitted = (await admitting.request(AdmitRunDocument, { input: { question: `bench ${run}` } })).admitRun;
    if (admitted.__typename !== "AdmitRunSuccess") throw new Error("admission failed");
    const received: { at: number; length: number }[] = [];
    let length = 0;
    const reading = (async () => {
      for await (const { runOutput } of watching.subscribe(RunOutputDocument, { runId: admitted.run.id })) {
        if (runOutput.kind !== "TEXT_DELTA") continue;
        length += runOutput.text!.length;
        received.push({ at: performance.now(), length });
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    listening();
    await reading;
    // Each piece arrived with the first frame that covered its last character.
    let end = 0;
    pieces.forEach((piece, index) => {
      end += piece.length;
      const frame = received.find((r) => r.length >= end)!;
      const latency = frame.at - sentAt[index]!;
      result.pieces.push(latency);
      if (index === 0) result.first.push(latency);
    });
    result.frames += received.length;
    result.piecesSent += pieces.length;
  }
  await watching.close();
  return result;
}

function row(scenario: string, m: Measured): string[] {
  return [
    scenario,
    fmt(percentile(m.first, 50)),
    fmt(percentile(m.first, 99)),
    fmt(Math.max(...m.first)),
    fmt(percentile(m.pieces, 50)),
    fmt(percentile(m.pieces, 99)),
    `${m.frames} / ${m.piecesSent}`,
  ];
}

async function main(): Promise<void> {
  const stub = await startOpenAIStreamStub(() => nextTurn);
  const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench");
  const rows: string[][] = [["scenario", "first p50", "first p99", "first max", "piece p50", "piece p99", "frames / pieces"]];
  try {
    const single = await startInstance(database.url, createEventBus(), stub.baseURL);
    rows.push(row("one instance, model at 100 pieces/s", await measure(single, single, 10)));
    rows.push(row("one instance, model at 500 pieces/s", await measure(single, single, 2)));
    await single.close();

    const busA = await createRedisEventBus(redisUrl);
    const busB = await createRedisEventBus(redisUrl);
    const executor = await startInstance(database.url, busA.events, stub.baseURL, busA.close);
    const watcher = await startInstance(database.url, busB.events, undefined, busB.close);
    rows.push(row("two instances via Redis, 100 pieces/s", await measure(executor, watcher, 10)));
    rows.push(row("two instances via Redis, 500 pieces/s", await measure(executor, watcher, 2)));
    await executor.close();
    await watcher.close();
  } finally {
    await database.drop();
    await stub.close();
  }
  printTable(rows);
  console.log(
    `\n${RUNS} runs per scenario, ${PIECES} pieces each; latency = the stub wrote a piece → the subscriber received the TEXT_DELTA holding it` +
      " (first: each answer's first piece). Deltas are coalesced every 30 ms, the first after a quiet spell sent at once.",
  );
}

await main();
process.exit(0);
