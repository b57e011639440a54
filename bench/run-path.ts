// The run path: how fast the runtime itself goes when the model does not hold it up. A local
// model server speaking the OpenAI streaming protocol answers at once; Dossier with its worker runs
// in a process of its own (bench/run-path-server.ts, bundled as `npm start` runs it), a bare
// graphql-yoga `{ hello }` server in another as the baseline measured in the same run. Figures:
//
// - trace records (spans and events) persisted per second, 16 runs at once, 6 parallel instant
//   tool calls (task_list) per turn, against the baseline's requests per second; baseline and runs
//   measured in interleaved pairs after a warm-up, the median of the pairs;
// - the turn gap: the model server wrote the last byte of an answer → the run's next model request
//   arrived, one instant built-in tool call between, one run at a time;
// - dispatch: admitRun's answer reached the client → the run's first model request arrived;
// - first token: the model server wrote an answer's first chunk → a runOutput subscriber got its
//   first delta (one instance);
// - the SQL statements and transactions per turn and the server's CPU per turn (the turn-gap runs:
//   admission, claim and settling included, spread over their turns).
//
// On PostgreSQL (TEST_POSTGRES_URL) and the embedded default (BENCH_DATABASES=postgres|pglite: one
// of them). BENCH_ROUNDS sets the pairs (3); BENCH_PHASES=records measures records per second only,
// with the server's CPU and SQL statements per record; BENCH_PARALLEL_RUNS sets the runs at once (16).
// The model server is in run-path-model.ts, the two processes in run-path-processes.ts.
//   npm run bench:run-path
import { createClient } from "../sdk/client.js";
import { AdmitRunDocument, RunEventsDocument, RunOutputDocument } from "../sdk/generated/graphql.js";
import { buildDossier } from "../scripts/build.mjs";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { holdAnswers, question, startModelServer, timelines } from "./run-path-model.js";
import { type Child, post, type Stats, spawn } from "./run-path-processes.js";
import { percentile, printTable } from "./support.js";
import { type ModelTimeline, printTurnTimeline } from "./turn-timeline.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** BENCH_DATABASES=postgres (or pglite) measures that database only. */
const DATABASES = process.env.BENCH_DATABASES ? new RegExp(process.env.BENCH_DATABASES, "i") : undefined;
const PARALLEL_RUNS = Number(process.env.BENCH_PARALLEL_RUNS ?? 16);
const CALLS_PER_TURN = 6;
const TOOL_TURNS = 5;
const GAP_RUNS = Number(process.env.BENCH_GAP_RUNS ?? 12);
const GAP_TURNS = 8;
const DISPATCH_RUNS = 30;
const FIRST_TOKEN_RUNS = 20;
const BASELINE_SECONDS = 2;
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

// ---- the measurements -------------------------------------------------------------------------

async function admit(url: string, text: string): Promise<{ id: string; at: number }> {
  const data = await post(url, `mutation ($input: AdmitRunInput!) { admitRun(input: $input) { __typename ... on AdmitRunSuccess { run { id } } } }`, {
    input: { question: text },
  });
  if (data.admitRun.__typename !== "AdmitRunSuccess") throw new Error(`admission failed: ${data.admitRun.__typename}`);
  return { id: data.admitRun.run.id as string, at: performance.now() };
}

/**
 * Waits for a run to settle as a client page would: through its `runEvents` subscription (its
 * current status first, then each change; completes after the terminal one), so that the server's
 * CPU and statements per record or turn hold the run's work and one subscription, not a status
 * poll every few milliseconds.
 */
async function settled(server: Child, id: string): Promise<void> {
  server.watching ??= createClient({ url: server.url, wsUrl: server.wsUrl });
  for await (const { runEvents } of server.watching.subscribe(RunEventsDocument, { runId: id })) {
    if (["QUEUED", "RUNNING", "WAITING", "PAUSED"].includes(runEvents.status)) continue;
    if (runEvents.status !== "SUCCEEDED") throw new Error(`run ${id} ended ${runEvents.status}: ${runEvents.run.failureReason} ${runEvents.run.answer}`);
    return;
  }
  throw new Error(`run ${id}'s status stream ended before the run settled`);
}

/** Requests per second of `{ hello }`, 16 clients back to back. */
async function baselineRate(url: string): Promise<number> {
  let done = 0;
  const end = performance.now() + BASELINE_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: PARALLEL_RUNS }, async () => {
      while (performance.now() < end) {
        await post(url, "{ hello }");
        done += 1;
      }
    }),
  );
  return done / BASELINE_SECONDS;
}

/** 16 runs at once, each TOOL_TURNS turns of CALLS_PER_TURN calls: trace records persisted per second. */
async function recordRate(server: Child): Promise<number> {
  const before = await server.stats();
  const started = performance.now();
  const runs = await Promise.all(Array.from({ length: PARALLEL_RUNS }, () => admit(server.url, question(TOOL_TURNS, CALLS_PER_TURN).text)));
  await Promise.all(runs.map((run) => settled(server, run.id)));
  const seconds = (performance.now() - started) / 1000;
  const after = await server.stats();
  const records = after.records - before.records;
  perRecord.push({ cpuMicros: (after.cpuMicros - before.cpuMicros) / records, statements: (after.statements - before.statements) / records });
  return records / seconds;
}

/** The server's CPU and SQL statements per trace record of each measured round (the runs' status subscriptions included). */
let perRecord: { cpuMicros: number; statements: number }[] = [];

/** BENCH_PHASES=records measures trace records per second only (no turn gap, dispatch or first token). */
const RECORDS_ONLY = process.env.BENCH_PHASES === "records";
/** BENCH_PHASES=gap measures the turn gap only (after the warm-up; no records rounds, dispatch or first token). */
const GAP_ONLY = process.env.BENCH_PHASES === "gap";

type Figures = {
  records: number;
  base: number;
  gaps: number[];
  dispatch: number[];
  first: number[];
  perTurn: Stats;
  perRecord: { cpuMicros: number; statements: number };
  /** The turn-gap runs as the model server saw them, in epoch ms (BENCH_TURN_TIMELINE). */
  gapRuns: ModelTimeline[];
};

async function measure(server: Child, baseline: Child): Promise<Figures> {
  // Warm-up: both servers, and a run of each kind.
  await baselineRate(baseline.url);
  if (!GAP_ONLY) await recordRate(server);
  const records: number[] = [];
  const base: number[] = [];
  perRecord = [];
  for (let round = 0; round < (GAP_ONLY ? 0 : ROUNDS); round += 1) {
    base.push(await baselineRate(baseline.url));
    records.push(await recordRate(server));
  }
  const median = (values: number[]) => percentile(values, 50);
  const costs = {
    cpuMicros: median(perRecord.map((round) => round.cpuMicros)) ?? 0,
    statements: median(perRecord.map((round) => round.statements)) ?? 0,
  };
  if (RECORDS_ONLY) {
    const none = { cpuMicros: 0, statements: 0, transactions: 0, records: 0 };
    return { records: median(records), base: median(base), gaps: [0], dispatch: [0], first: [0], perTurn: none, perRecord: costs, gapRuns: [] };
  }

  const gaps: number[] = [];
  const gapRuns: ModelTimeline[] = [];
  // The turn gap alone is warmed up by runs of its own kind.
  for (let i = 0; i < (GAP_ONLY ? 3 : 0); i += 1) await settled(server, (await admit(server.url, question(GAP_TURNS, 1).text)).id);
  const before = await server.stats();
  for (let i = 0; i < GAP_RUNS; i += 1) {
    const { key, text } = question(GAP_TURNS, 1);
    const run = await admit(server.url, text);
    await settled(server, run.id);
    const { requests, answered } = timelines.get(key)!;
    for (let turn = 0; turn < GAP_TURNS; turn += 1) gaps.push(requests[turn + 1]! - answered[turn]!);
    const epoch = (at: number) => performance.timeOrigin + at;
    gapRuns.push({ requests: requests.map(epoch), answered: answered.map(epoch) });
  }
  const after = await server.stats();
  const turns = GAP_RUNS * (GAP_TURNS + 1);
  const perTurn: Stats = {
    cpuMicros: (after.cpuMicros - before.cpuMicros) / turns,
    statements: (after.statements - before.statements) / turns,
    transactions: (after.transactions - before.transactions) / turns,
    records: (after.records - before.records) / turns,
  };

  if (GAP_ONLY) return { records: 0, base: 1, gaps, dispatch: [0], first: [0], perTurn, perRecord: costs, gapRuns };
  const dispatch: number[] = [];
  for (let i = 0; i < DISPATCH_RUNS; i += 1) {
    const { key, text } = question(0, 0);
    const run = await admit(server.url, text);
    await settled(server, run.id);
    dispatch.push(timelines.get(key)!.requests[0]! - run.at);
  }

  const first: number[] = [];
  const watching = createClient({ url: server.url, wsUrl: server.wsUrl });
  for (let i = 0; i < FIRST_TOKEN_RUNS; i += 1) {
    let listening: () => void = () => undefined;
    holdAnswers(new Promise((resolve) => (listening = resolve)));
    const { key, text } = question(0, 0);
    const admitted = (await watching.request(AdmitRunDocument, { input: { question: text } })).admitRun;
    if (admitted.__typename !== "AdmitRunSuccess") throw new Error("admission failed");
    let received = 0;
    const reading = (async () => {
      for await (const { runOutput } of watching.subscribe(RunOutputDocument, { runId: admitted.run.id })) {
        if (runOutput.kind === "TEXT_DELTA" && received === 0) received = performance.now();
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    listening();
    await reading;
    holdAnswers(undefined);
    first.push(received - timelines.get(key)!.firstChunk!);
  }
  await watching.close();
  return { records: median(records), base: median(base), gaps, dispatch, first, perTurn, perRecord: costs, gapRuns };
}

const ms = (value: number) => `${value.toFixed(1)} ms`;

/** BENCH_TURN_TIMELINE=<file>: where the steady turns' gaps go, by segment (bench/turn-timeline.ts). */
const TURN_TIMELINE = process.env.BENCH_TURN_TIMELINE;

async function main(): Promise<void> {
  await buildDossier(["bench/server-process.ts", "bench/run-path-server.ts"]);
  const model = await startModelServer();
  const baseline = await spawn("dist/bench/server-process.js", ["baseline"]);
  const rows: string[][] = [
    [
      "database",
      "records/s (16 runs, 6 calls/turn)",
      "baseline {hello}/s",
      "ratio",
      "turn gap p50",
      "p99",
      "dispatch p50",
      "p99",
      "first token p50",
      "p99",
      "SQL/turn",
      "transactions/turn",
      "server CPU/turn",
      "CPU/record",
      "SQL/record",
    ],
  ];
  try {
    const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench");
    const targets: [string, string, () => Promise<void>][] = [
      ["PostgreSQL", database.url, database.drop],
      ["embedded (PGlite)", "pglite", async () => undefined],
    ].filter(([label]) => !DATABASES || DATABASES.test(label as string)) as [string, string, () => Promise<void>][];
    for (const [label, target, dispose] of targets) {
      const server = await spawn("dist/bench/run-path-server.js", [target, model.baseURL]);
      let gapRuns: ModelTimeline[] = [];
      try {
        const f = await measure(server, baseline);
        rows.push([
          label,
          `${f.records.toFixed(0)}/s`,
          `${f.base.toFixed(0)}/s`,
          `${(f.records / f.base).toFixed(2)}×`,
          ms(percentile(f.gaps, 50)),
          ms(percentile(f.gaps, 99)),
          ms(percentile(f.dispatch, 50)),
          ms(percentile(f.dispatch, 99)),
          ms(percentile(f.first, 50)),
          ms(percentile(f.first, 99)),
          f.perTurn.statements.toFixed(1),
          f.perTurn.transactions.toFixed(1),
          ms(f.perTurn.cpuMicros / 1000),
          ms(f.perRecord.cpuMicros / 1000),
          f.perRecord.statements.toFixed(2),
        ]);
        gapRuns = f.gapRuns;
      } finally {
        await server.stop();
        await dispose();
      }
      // The server wrote its side as it stopped.
      if (TURN_TIMELINE) {
        console.log(`\n${label}:`);
        printTurnTimeline(TURN_TIMELINE, gapRuns);
      }
    }
  } finally {
    await baseline.stop();
    await model.close();
  }
  printTable(rows);
  console.log(
    `\nrecords/s and the baseline: medians of ${ROUNDS} interleaved pairs after a warm-up (${BASELINE_SECONDS} s of { hello } from 16 clients, then ${PARALLEL_RUNS} runs of ${TOOL_TURNS} turns × ${CALLS_PER_TURN} task_list calls); CPU and SQL per record are theirs (the runs' status subscriptions included).` +
      `\nturn gap: ${GAP_RUNS} runs one at a time, ${GAP_TURNS} turns of one task_list call each; SQL, transactions and CPU per turn are theirs, admission, claim and settling spread over their ${GAP_TURNS + 1} model requests.` +
      `\ndispatch: ${DISPATCH_RUNS} runs one at a time, admitRun's answer → first model request. first token: ${FIRST_TOKEN_RUNS} runs, model's first chunk → the subscriber's first delta.`,
  );
}

await main();
process.exit(0);
