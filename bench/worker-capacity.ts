// One worker process, many runs at once: RUNS runs admitted together, each answered by a model
// that streams for MODEL_SECONDS, each watched by its own `runOutput` subscriber. Reports how much
// longer than its model time each run took (admission to SUCCEEDED), the worker's resident memory
// (most and at the end), its CPU and SQL per run, and how late each streamed piece reached its
// subscriber. The processes are the ones an operator runs: `npm start` with IN_PROCESS_WORKER=false
// (the API) and `npm run worker` (WORKER_CONCURRENCY=RUNS), on PostgreSQL and Redis; the model
// server and the subscribers are this process, so write and receive times are on one clock.
// Baseline: the same runs' model time as the model server measured it. First, the dispatch of
// SINGLE_RUNS runs admitted one at a time to the free worker process.
//   npm run bench:capacity              (RUNS=100 MODEL_SECONDS=10 by default; BENCH_HOPS=1: each piece hop by hop;
//                                        BENCH_API_POOL, BENCH_WORKER_POOL: that process's DB_POOL_SIZE;
//                                        BENCH_STREAM_POOL: the API's DB_STREAM_POOL_SIZE;
//                                        BENCH_WORKER_FLAGS, BENCH_API_FLAGS: Node.js flags added to that process's)
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createClient } from "../sdk/client.js";
import { AdmitRunDocument, RunDocument, RunOutputDocument } from "../sdk/generated/graphql.js";
import { spawnBuilt } from "../test/support/processes.js";
import { startOpenAIStreamStub } from "../test/support/openai-stream-stub.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { hopsEnv, machineCpu, pieceSeen, printPieceHops } from "./piece-hops.js";
import { percentile, printTable } from "./support.js";

const RUNS = Number(process.env.RUNS ?? 100);
const MODEL_SECONDS = Number(process.env.MODEL_SECONDS ?? 10);
const PIECES = 40;
/** The first part of the measured round whose event loop delay is reported apart: admissions and claims. */
const BURST_MS = Number(process.env.BURST_MS ?? 3_000);
/** Runs admitted one at a time, for the dispatch figure. */
const SINGLE_RUNS = Number(process.env.SINGLE_RUNS ?? 20);
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const redisUrl = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** Per run: when the model server wrote each piece, and when its first request arrived and its answer ended. */
type ModelTimes = { pieces: number[]; requestedAt?: number; endedAt?: number; endedWallMs?: number; doneWallMs?: number };
const modelTimes = new Map<number, ModelTimes>();
let nextIndex = 0;
const timesOf = (index: number) => modelTimes.get(index) ?? modelTimes.set(index, { pieces: [] }).get(index)!;

const model = await startOpenAIStreamStub((body) => {
  const question = body.messages.find((m) => m.role === "user" && m.content?.startsWith("capacity run "))?.content ?? "capacity run -1";
  const index = Number(/capacity run (\d+)/.exec(question)?.[1] ?? -1);
  const seconds = question.includes("(warm-up)") ? 1 : question.includes("(single)") ? 0.2 : MODEL_SECONDS;
  const times = timesOf(index);
  times.requestedAt = performance.now();
  return {
    text: Array.from({ length: PIECES }, (_, i) => `[${index}:${i}] `),
    gapMs: (seconds * 1_000) / (PIECES - 1),
    sent: (piece, at) => {
      times.pieces[piece] = at;
      if (piece === PIECES - 1) {
        times.endedAt = at;
        times.endedWallMs = Date.now();
      }
    },
  };
});

const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench_capacity");
const port = await freePort();
const common = {
  DATABASE_URL: database.url,
  REDIS_URL: redisUrl,
  AUTH_REQUIRED: "false",
  LOG_LEVEL: "info",
  OPENAI_API_KEY: "sk-bench",
  OPENAI_BASE_URL: model.baseURL,
  MODEL: "stub-model",
  // Each process reports its event loop's delay on SIGUSR2 (loop-delay-probe.mjs).
  NODE_OPTIONS: `--import ${fileURLToPath(new URL("./loop-delay-probe.mjs", import.meta.url))}`,
};
// BENCH_HOPS=1: each piece's time at each hop (piece-hops.ts) is printed after the figures.
const withHops = (role: string) => {
  const { HOPS_IMPORT, ...env } = hopsEnv(role);
  return HOPS_IMPORT ? { ...env, NODE_OPTIONS: `${common.NODE_OPTIONS} ${HOPS_IMPORT}` } : env;
};
// BENCH_API_POOL / BENCH_WORKER_POOL=<n>: that process's DB_POOL_SIZE (unset: its default).
const poolOf = (name: string): Record<string, string> => (process.env[name] ? { DB_POOL_SIZE: process.env[name] } : {});
// BENCH_STREAM_POOL=<n>: the API's DB_STREAM_POOL_SIZE (unset: its default).
const streamPool: Record<string, string> = process.env.BENCH_STREAM_POOL ? { DB_STREAM_POOL_SIZE: process.env.BENCH_STREAM_POOL } : {};
// BENCH_API_PROF=<dir>: the API writes a V8 CPU profile there when it stops (as BENCH_CPU_PROF for the worker).
const api = spawnBuilt("src/main.ts", {
  nodeFlags: [
    ...(process.env.BENCH_API_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_API_PROF}`] : []),
    ...(process.env.BENCH_API_FLAGS?.split(" ").filter(Boolean) ?? []),
  ],
  env: {
    ...common,
    ...poolOf("BENCH_API_POOL"),
    ...streamPool,
    ...withHops("api"),
    PORT: String(port),
    IN_PROCESS_WORKER: "false",
    MAX_SUBSCRIPTIONS_PER_CONNECTION: String(RUNS + 10),
    MAX_QUEUED_RUNS_PER_PRINCIPAL: String(Math.max(RUNS, 1_000)),
  },
});
await api.waitForOutput(/Dossier is listening/, 120_000);
// BENCH_CPU_PROF=<dir>: the worker writes a V8 CPU profile there when it stops.
const worker = spawnBuilt("src/worker-main.ts", {
  nodeFlags: [
    ...(process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    // BENCH_WORKER_FLAGS="<node flags>": after the worker's own (a later V8 flag wins), to compare settings in one tree.
    ...(process.env.BENCH_WORKER_FLAGS?.split(" ").filter(Boolean) ?? []),
  ],
  env: {
    ...common,
    ...poolOf("BENCH_WORKER_POOL"),
    ...withHops("worker"),
    WORKER_CONCURRENCY: String(RUNS),
    MAX_RUNNING_RUNS_PER_PRINCIPAL: String(RUNS),
    MODEL_MAX_CONCURRENCY: String(RUNS),
  },
});
await worker.waitForOutput(/worker started/, 120_000);
const workerPid = worker.child.pid!;

try {
  const url = `http://127.0.0.1:${port}/graphql`;
  const client = createClient({ url, wsUrl: url.replace(/^http/, "ws") });
  // Warm-up: a tenth of the runs, a second each, so that what is measured is not the first use of anything.
  await round(client, Math.max(1, Math.round(RUNS / 10)), "warm-up");
  // Dispatch with a free worker: one run at a time, admission to its model request.
  const single: number[] = [];
  for (let i = 0; i < SINGLE_RUNS; i += 1) single.push(...(await round(client, 1, "single")).dispatches);
  const cpuBefore = cpuMicrosOf(workerPid);
  const transactionsBefore = await transactionsOf(database.url);
  let maxWorkerRss = rssOf(workerPid);
  const sampler = setInterval(() => {
    if (worker.child.exitCode === null) maxWorkerRss = Math.max(maxWorkerRss, rssOf(workerPid));
    else console.log(worker.output().slice(-3000));
  }, 200);
  // Loop delay of the API, the worker and this process (the model server and the subscribers):
  // during the burst of admissions and claims (its first BURST_MS), then while the answers stream.
  const benchDelay = monitorEventLoopDelay({ resolution: 5 });
  const delays: { api: string[]; worker: string[]; bench: string[] } = { api: [], worker: [], bench: [] };
  const lines = (output: string) => [...output.matchAll(/loop-delay ([^\n]*)/g)].map((match) => match[1]!);
  const sampleDelays = async () => {
    const seen = lines(api.output()).length + lines(worker.output()).length;
    api.child.kill("SIGUSR2");
    worker.child.kill("SIGUSR2");
    while (lines(api.output()).length + lines(worker.output()).length < seen + 2) await new Promise((resolve) => setTimeout(resolve, 20));
    delays.api.push(lines(api.output()).at(-1)!);
    delays.worker.push(lines(worker.output()).at(-1)!);
    const ms = (ns: number) => (ns / 1e6).toFixed(1);
    delays.bench.push(`p50=${ms(benchDelay.percentile(50))} p99=${ms(benchDelay.percentile(99))} max=${ms(benchDelay.max)}`);
    benchDelay.reset();
  };
  await sampleDelays();
  delays.api.length = delays.worker.length = delays.bench.length = 0;
  benchDelay.enable();
  const cpuShares = machineCpu({ api: api.child.pid!, worker: workerPid });
  const burstSample = new Promise((resolve) => setTimeout(resolve, BURST_MS)).then(sampleDelays);
  const { overruns, dispatches, settles, lateness, firstLateness, starts } = await round(client, RUNS, "measured");
  await burstSample;
  await sampleDelays();
  await cpuShares.stop(() => backendPids(database.url));
  benchDelay.disable();
  const { executions, claims, settledAfter, deliveredAfter } = await executionOverruns(database.url);
  clearInterval(sampler);
  const cpu = cpuMicrosOf(workerPid) - cpuBefore;
  const transactions = (await transactionsOf(database.url)) - transactionsBefore;
  await client.close();

  const ms = (value: number) => `${value.toFixed(1)} ms`;
  const pct = (value: number) => `${(value * 100).toFixed(1)} %`;
  console.log(`\n${RUNS} runs at once on one worker process, a ${MODEL_SECONDS} s streamed answer each (${PIECES} pieces), a runOutput subscriber each`);
  printTable([
    ["figure", "p50", "p99", "max", "goal"],
    ["run time beyond its model time, from its claim", pct(percentile(executions, 50)), pct(percentile(executions, 99)), pct(Math.max(...executions)), "≤ 5 %"],
    ["run time beyond its model time, from its admission", pct(percentile(overruns, 50)), pct(percentile(overruns, 99)), pct(Math.max(...overruns)), "≤ 5 %"],
    ["admission → the run's claim (database clock)", ms(percentile(claims, 50)), ms(percentile(claims, 99)), ms(Math.max(...claims)), ""],
    ["admission → the run's model request", ms(percentile(dispatches, 50)), ms(percentile(dispatches, 99)), ms(Math.max(...dispatches)), ""],
    ["answer's last piece → subscriber's RUN_DONE", ms(percentile(settles, 50)), ms(percentile(settles, 99)), ms(Math.max(...settles)), ""],
    ["  of it: last piece → the worker's settle", ms(percentile(settledAfter, 50)), ms(percentile(settledAfter, 99)), ms(Math.max(...settledAfter)), ""],
    ["  of it: settle → RUN_DONE", ms(percentile(deliveredAfter, 50)), ms(percentile(deliveredAfter, 99)), ms(Math.max(...deliveredAfter)), ""],
    ["piece written → subscriber", ms(percentile(lateness, 50)), ms(percentile(lateness, 99)), ms(Math.max(...lateness)), "≤ 100 ms"],
    ["a run's first live piece → subscriber", ms(percentile(firstLateness, 50)), ms(percentile(firstLateness, 99)), ms(Math.max(...firstLateness)), ""],
    ["subscription sent → its first update", ms(percentile(starts, 50)), ms(percentile(starts, 99)), ms(Math.max(...starts)), ""],
  ]);
  console.log(`\nDispatch with a free worker process (pg-boss), ${SINGLE_RUNS} runs one at a time: admission's answer → the run's model request`);
  printTable([
    ["p50", "p99", "max", "goal"],
    [ms(percentile(single, 50)), ms(percentile(single, 99)), ms(Math.max(...single)), "p50 ≤ 25 ms, p99 ≤ 100 ms"],
  ]);
  console.log(`\nEvent loop delay (ms): the first ${BURST_MS} ms of the ${RUNS} runs (admissions and claims), then the rest`);
  printTable([["process", "burst", "streaming"], ...(["api", "worker", "bench"] as const).map((name) => [name, delays[name][0]!, delays[name][1]!])]);
  printTable([
    ["worker", "value", "goal"],
    ["resident memory, most", `${(maxWorkerRss / 2 ** 20).toFixed(0)} MB`, "< 500 MB"],
    ["resident memory, at the end", `${(rssOf(workerPid) / 2 ** 20).toFixed(0)} MB`, ""],
    ["CPU per run", ms(cpu / 1_000 / RUNS), ""],
    ["database transactions per run (all processes)", (transactions / RUNS).toFixed(1), ""],
  ]);
} finally {
  if (process.env.BENCH_LOGS) console.log(api.output(), worker.output());
  worker.child.kill("SIGTERM");
  api.child.kill("SIGTERM");
  await Promise.all([worker.exited, api.exited]);
  await model.close();
  await database.drop();
  printPieceHops();
}

type Client = ReturnType<typeof createClient>;

/** `count` runs admitted at once and watched to their end; what each measured. */
async function round(client: Client, count: number, label: string) {
  const overruns: number[] = [];
  const dispatches: number[] = [];
  const settles: number[] = [];
  const lateness: number[] = [];
  /** The lateness of each run's first live piece, and when (after the round began) it was written. */
  const firstLateness: number[] = [];
  /** Each subscription's start: the subscribe sent → its first update received. */
  const starts: number[] = [];
  const lateAt: string[] = [];
  /** The runs that reached RUN_DONE, their status checked after the round. */
  const ended: { index: number; runId: string }[] = [];
  const startedAt = performance.now();
  // Each subscriber joins right after its own run's admission, as a client page does (one that
  // joins mid-answer gets the text so far in one delta).
  await Promise.all(
    Array.from({ length: count }, async () => {
      const index = nextIndex++;
      const result = await client.request(AdmitRunDocument, { input: { question: `capacity run ${index} (${label}): answer at length` } });
      if (result.admitRun.__typename !== "AdmitRunSuccess") throw new Error(`admission refused: ${JSON.stringify(result.admitRun)}`);
      const runId = result.admitRun.run.id;
      const admittedAt = performance.now();
      const received: { piece: number; at: number }[] = [];
      let updates = 0;
      for await (const { runOutput } of client.subscribe(RunOutputDocument, { runId })) {
        if (updates++ === 0) starts.push(performance.now() - admittedAt);
        if (runOutput.kind === "TEXT_DELTA" && runOutput.text) {
          const at = performance.now();
          const pieces = [...runOutput.text.matchAll(/\[\d+:(\d+)\] /g)].map((match) => Number(match[1]));
          // A subscriber that joined mid-answer first gets the text so far in one delta: not a live piece.
          const catchUp = received.length === 0 && pieces.length > 1;
          if (catchUp) received.push({ piece: -1, at });
          else
            for (const piece of pieces) {
              received.push({ piece, at });
              if (label === "measured") pieceSeen(index, piece);
            }
        }
        if (runOutput.kind === "RUN_DONE") break;
      }
      const finishedAt = performance.now();
      timesOf(index).doneWallMs = Date.now();
      const times = timesOf(index);
      for (const { piece, at } of received) if (piece >= 0) lateness.push(at - times.pieces[piece]!);
      const first = received.find(({ piece }) => piece >= 0);
      if (first) firstLateness.push(first.at - times.pieces[first.piece]!);
      for (const { piece, at } of received)
        if (piece >= 0 && at - times.pieces[piece]! > 100)
          lateAt.push(`${index}:${piece}@${((times.pieces[piece]! - startedAt) / 1000).toFixed(1)}s+${(at - times.pieces[piece]!).toFixed(0)}`);
      ended.push({ index, runId });
      // The run's time beyond its model's own: admission to the subscriber's RUN_DONE, against the model request's time.
      const modelMs = times.endedAt! - times.requestedAt!;
      overruns.push((finishedAt - admittedAt - modelMs) / modelMs);
      dispatches.push(times.requestedAt! - admittedAt);
      settles.push(finishedAt - times.endedAt!);
    }),
  );
  // Each run's status is checked once every run ended: a read per RUN_DONE while the others still
  // stream would be this process's own load on the API in the middle of what is measured.
  for (const { index, runId } of ended) {
    const run = await client.request(RunDocument, { id: runId });
    if (run.node?.__typename !== "Run" || run.node.status !== "SUCCEEDED") throw new Error(`run ${index} ended ${JSON.stringify(run.node)}`);
  }
  if (process.env.BENCH_LATE && label === "measured") console.log(`pieces later than 100 ms (piece@written): ${lateAt.join(" ")}`);
  return { overruns, dispatches, settles, lateness, firstLateness, starts };
}

/**
 * Each measured run's time on the worker (its claim to its end, as the run records them) beyond
 * its model request's time, and its admission to its claim (both on the database's clock).
 */
async function executionOverruns(url: string): Promise<{ executions: number[]; claims: number[]; settledAfter: number[]; deliveredAfter: number[] }> {
  const { default: pg } = await import("pg");
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const { rows } = await sql.query<{ question: string; ms: number; claim_ms: number; finished_ms: number }>(
      `SELECT question, extract(epoch FROM finished_at - started_at) * 1000 AS ms, extract(epoch FROM started_at - created_at) * 1000 AS claim_ms,
              extract(epoch FROM finished_at) * 1000 AS finished_ms
         FROM run WHERE question LIKE '%(measured)%'`,
    );
    const executions = rows.map(({ question, ms }) => {
      const times = timesOf(Number(/capacity run (\d+)/.exec(question)![1]));
      const modelMs = times.endedAt! - times.requestedAt!;
      return (Number(ms) - modelMs) / modelMs;
    });
    // The database runs on this machine: its clock is this process's wall clock.
    const ended = rows.map(({ question, finished_ms }) => ({ times: timesOf(Number(/capacity run (\d+)/.exec(question)![1])), at: Number(finished_ms) }));
    const settledAfter = ended.map(({ times, at }) => at - times.endedWallMs!);
    const deliveredAfter = ended.map(({ times, at }) => times.doneWallMs! - at);
    return { executions, claims: rows.map((row) => Number(row.claim_ms)), settledAfter, deliveredAfter };
  } finally {
    await sql.end();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function rssOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb ?? 0) * 1024;
}

/** The process's user and system CPU time so far, in microseconds (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMicrosOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** The PostgreSQL backends serving the database (Dossier's pooled connections), by process id. */
async function backendPids(url: string): Promise<number[]> {
  const { default: pg } = await import("pg");
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const { rows } = await sql.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()");
    return rows.map((row) => row.pid);
  } finally {
    await sql.end();
  }
}

/** Transactions PostgreSQL has ended on the database so far, committed or rolled back (each statement outside one is one). */
async function transactionsOf(url: string): Promise<number> {
  const { default: pg } = await import("pg");
  const sql = new pg.Client({ connectionString: url });
  await sql.connect();
  try {
    const { rows } = await sql.query("SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()");
    return Number(rows[0].n);
  } finally {
    await sql.end();
  }
}
