// What the API process spends on each part of a burst of runs, apart: RUNS admissions at once,
// then a runOutput subscription to each, then the rest of their answers forwarded to those
// subscribers. The API runs as `npm start` does with IN_PROCESS_WORKER=false, beside one worker
// process (`npm run worker`), on PostgreSQL and Redis. Each model answer is held after its first
// piece until the subscriptions have started, so the three parts do not overlap. Per part: the
// API's CPU (user + system, /proc/<pid>/stat, robust on a shared machine where wall time is not),
// and the SQL statements and round trips it sent (counted on the wire by a proxy in front of
// PostgreSQL that only the API goes through). Medians of ROUNDS rounds.
// With BENCH_BASE_DIST=<dir> (a copy of an older build's dist/, with a node_modules beside it),
// a second API runs that build on the same database, worker and Redis, and the rounds alternate
// between the two: the ratios compare the builds on the machine's load of the moment.
//   node --import tsx bench/api-op-costs.ts   (RUNS=100 ROUNDS=5; BENCH_SQL=1: each part's statements;
//                                             BENCH_API_PROF=<dir>: a CPU profile of this build's API;
//                                             BENCH_API_FLAGS: Node.js flags added to this build's API)
import { readFileSync } from "node:fs";
import path from "node:path";
import { createClient } from "../sdk/client.js";
import { AdmitRunDocument, RunOutputDocument } from "../sdk/generated/graphql.js";
import { NODE_ENV, NODE_FLAGS } from "../scripts/build.mjs";
import { type Spawned, spawnBuilt, spawnShell } from "../test/support/processes.js";
import { startOpenAIStreamStub } from "../test/support/openai-stream-stub.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { countsBetween, startWireCounter, type WireCounter, type WireCounts } from "./pg-wire-count.js";
import { printTable } from "./support.js";

const RUNS = Number(process.env.RUNS ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const PIECES = 40;
const GAP_MS = Number(process.env.GAP_MS ?? 50);
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const redisUrl = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const baseDist = process.env.BENCH_BASE_DIST;

/** Per run: the model's pieces written so far, and the hold on its second piece. */
const written = new Map<number, number>();
let hold: { until: Promise<void>; release(): void } = held();
let nextIndex = 0;

function held() {
  let release = () => {};
  const until = new Promise<void>((resolve) => (release = resolve));
  return { until, release };
}

const model = await startOpenAIStreamStub((body) => {
  const question = body.messages.find((m) => m.role === "user" && m.content?.startsWith("op-cost run "))?.content ?? "";
  const index = Number(/op-cost run (\d+)/.exec(question)?.[1] ?? -1);
  return {
    text: Array.from({ length: PIECES }, (_, i) => `[${index}:${i}] `),
    gapMs: GAP_MS,
    pause: { index: 1, until: hold.until },
    sent: (piece) => written.set(index, piece + 1),
  };
});

const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench_opcost");
const common = {
  DATABASE_URL: database.url,
  REDIS_URL: redisUrl,
  REDIS_PREFIX: `opcost-${path.basename(new URL(database.url).pathname)}`,
  AUTH_REQUIRED: "false",
  LOG_LEVEL: "info",
  OPENAI_API_KEY: "sk-bench",
  OPENAI_BASE_URL: model.baseURL,
  MODEL: "stub-model",
  // The machine may be shared and busy: a slow new connection is not what is measured.
  DB_CONNECT_TIMEOUT_MS: "30000",
};

type Api = { name: string; process: Spawned; wire: WireCounter; client: ReturnType<typeof createClient> };

async function startApi(name: string, dist?: string): Promise<Api> {
  const wire = await startWireCounter(database.url);
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const env = {
    ...common,
    DATABASE_URL: wire.url,
    PORT: String(port),
    IN_PROCESS_WORKER: "false",
    MAX_SUBSCRIPTIONS_PER_CONNECTION: String(RUNS + 10),
    MAX_QUEUED_RUNS_PER_PRINCIPAL: String(Math.max(RUNS, 1_000)),
  };
  const spawned = dist
    ? spawnShell([...Object.entries(NODE_ENV).map(([k, v]) => `${k}=${v}`), process.execPath, ...NODE_FLAGS, path.join(dist, "src/main.js")].join(" "), {
        env,
      })
    : // BENCH_API_PROF=<dir>: this build's API writes a V8 CPU profile there when it stops.
      spawnBuilt("src/main.ts", {
        env,
        nodeFlags: [
          ...(process.env.BENCH_API_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_API_PROF}`] : []),
          // BENCH_API_FLAGS="<node flags>": after this build's own (a later V8 flag wins), to compare settings against the base.
          ...(process.env.BENCH_API_FLAGS?.split(" ").filter(Boolean) ?? []),
        ],
      });
  await spawned.waitForOutput(/Dossier is listening/, 120_000);
  const url = `http://127.0.0.1:${port}/graphql`;
  return { name, process: spawned, wire, client: createClient({ url, wsUrl: url.replace(/^http/, "ws") }) };
}

/** The process's user and system CPU time so far, in milliseconds (clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const until = async (check: () => boolean, what: string, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Part = { cpuMs: number; wire: WireCounts };
type Round = { idleMsPerS: number; admission: Part; claims: Part; start: Part; forwarding: Part; forwarded: number };

/**
 * One round on `api`, again when it failed: on a machine this busy a statement or a connection
 * can time out (a refused admission, a subscription ended with SERVICE_UNAVAILABLE).
 */
async function round(api: Api): Promise<Round> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await measuredRound(api);
    } catch (error) {
      // The failed round's runs go on to their ends, unwatched.
      hold.release();
      if (attempt === 3) throw error;
      console.log(`${api.name}: a round failed (${(error as Error).message.split("\n")[0]}); measured again`);
      await pause(5_000);
    }
  }
}

/** One round on `api`: RUNS admissions, RUNS subscription starts, then the rest of the answers forwarded. */
async function measuredRound(api: Api): Promise<Round> {
  const pid = api.process.child.pid!;
  const mark = () => ({ cpu: cpuMsOf(pid), wire: api.wire.counts() });
  const part = (from: ReturnType<typeof mark>, to: ReturnType<typeof mark>): Part => ({ cpuMs: to.cpu - from.cpu, wire: countsBetween(from.wire, to.wire) });
  hold = held();
  const idleFrom = mark();
  await pause(1_000);
  const m0 = mark();
  const indexes = Array.from({ length: RUNS }, () => nextIndex++);
  const runIds = await Promise.all(
    indexes.map(async (index) => {
      const result = await api.client.request(AdmitRunDocument, { input: { question: `op-cost run ${index}: answer at length` } });
      if (result.admitRun.__typename !== "AdmitRunSuccess") throw new Error(`admission refused: ${JSON.stringify(result.admitRun)}`);
      return result.admitRun.run.id;
    }),
  );
  const m1 = mark();
  // Every run claimed, its model call running and its first piece written; then a quiet moment.
  await until(() => indexes.every((index) => (written.get(index) ?? 0) >= 1), "the first pieces");
  await pause(300);
  const m2 = mark();
  let started = 0;
  let forwarded = 0;
  let done = 0;
  const streams = runIds.map(async (runId) => {
    let first = true;
    for await (const { runOutput } of api.client.subscribe(RunOutputDocument, { runId })) {
      if (first) started += 1;
      else if (runOutput.kind === "TEXT_DELTA") forwarded += 1;
      first = false;
      if (runOutput.kind === "RUN_DONE") break;
    }
    done += 1;
  });
  await until(() => started === RUNS, "the subscriptions' first updates");
  await pause(300);
  const m3 = mark();
  hold.release();
  await Promise.all(streams);
  const m4 = mark();
  if (done !== RUNS) throw new Error(`${done} streams ended of ${RUNS}`);
  return {
    idleMsPerS: ((m0.cpu - idleFrom.cpu) * 1_000) / 1_000,
    admission: part(m0, m1),
    claims: part(m1, m2),
    start: part(m2, m3),
    forwarding: part(m3, m4),
    forwarded,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const worker = spawnBuilt("src/worker-main.ts", {
  env: { ...common, WORKER_CONCURRENCY: String(RUNS), MAX_RUNNING_RUNS_PER_PRINCIPAL: String(RUNS), MODEL_MAX_CONCURRENCY: String(RUNS) },
});
const apis: Api[] = [];
try {
  apis.push(await startApi("this build"));
  if (baseDist) apis.push(await startApi("base build", baseDist));
  await worker.waitForOutput(/worker started/, 120_000);
  // Warm-up: one round each, not counted.
  for (const api of apis) await round(api);
  const rounds = new Map<Api, Round[]>(apis.map((api) => [api, []]));
  for (let i = 0; i < ROUNDS; i += 1) {
    // Alternate which build goes first, so that neither always follows the other.
    for (const api of i % 2 ? [...apis].reverse() : apis) rounds.get(api)!.push(await round(api));
  }
  const figures = (api: Api) => {
    const list = rounds.get(api)!;
    const m = (pick: (r: Round) => number) => median(list.map(pick));
    return {
      idle: m((r) => r.idleMsPerS),
      admissionCpu: m((r) => r.admission.cpuMs),
      admissionSql: m((r) => r.admission.wire.statements) / RUNS,
      admissionTrips: m((r) => r.admission.wire.roundTrips) / RUNS,
      claimsCpu: m((r) => r.claims.cpuMs),
      claimsSql: m((r) => r.claims.wire.statements),
      startCpu: m((r) => r.start.cpuMs),
      startSql: m((r) => r.start.wire.statements) / RUNS,
      startTrips: m((r) => r.start.wire.roundTrips) / RUNS,
      forwardCpu: m((r) => (r.forwarding.cpuMs * 1_000) / Math.max(1, r.forwarded)),
      forwardSql: m((r) => r.forwarding.wire.statements) / RUNS,
      forwarded: m((r) => r.forwarded),
    };
  };
  const all = apis.map(figures);
  const f1 = (value: number) => value.toFixed(1);
  const f2 = (value: number) => value.toFixed(2);
  const ratio = (pick: (f: ReturnType<typeof figures>) => number) => (all[1] ? `${(pick(all[0]!) / pick(all[1]!)).toFixed(2)}×` : "");
  console.log(`\nThe API's CPU and SQL per part of a burst of ${RUNS} runs (median of ${ROUNDS} rounds${baseDist ? ", alternating with the base build" : ""})`);
  const row = (label: string, pick: (f: ReturnType<typeof figures>) => number, format: (value: number) => string) => [
    label,
    ...all.map((f) => format(pick(f))),
    ratio(pick),
  ];
  printTable([
    ["figure", ...apis.map((api) => api.name), baseDist ? "this / base" : ""],
    row(`CPU ms per ${RUNS} admissions`, (f) => f.admissionCpu, f1),
    row("  statements per admission", (f) => f.admissionSql, f2),
    row("  round trips per admission", (f) => f.admissionTrips, f2),
    row(`CPU ms while the ${RUNS} runs are claimed (no request)`, (f) => f.claimsCpu, f1),
    row(`CPU ms per ${RUNS} runOutput subscription starts`, (f) => f.startCpu, f1),
    row("  statements per subscription start", (f) => f.startSql, f2),
    row("  round trips per subscription start", (f) => f.startTrips, f2),
    row("CPU ms per 1,000 forwarded deltas (and the runs' ends)", (f) => f.forwardCpu, f1),
    row("  statements per run while forwarding", (f) => f.forwardSql, f2),
    row(
      "deltas forwarded per round",
      (f) => f.forwarded,
      (v) => v.toFixed(0),
    ),
    row("idle CPU ms per second", (f) => f.idle, f1),
  ]);
  if (process.env.BENCH_SQL)
    for (const api of apis) {
      const last = rounds.get(api)!.at(-1)!;
      for (const [name, part] of [
        ["admission", last.admission],
        ["claims", last.claims],
        ["subscription start", last.start],
        ["forwarding", last.forwarding],
      ] as const) {
        console.log(`\n${api.name}, ${name}: ${part.wire.statements} statements, ${part.wire.roundTrips} round trips`);
        for (const [text, n] of [...part.wire.texts].sort((a, b) => b[1] - a[1])) console.log(`  ${n} × ${text}`);
      }
    }
} finally {
  for (const api of apis) await api.client.close();
  worker.child.kill("SIGTERM");
  for (const api of apis) api.process.child.kill("SIGTERM");
  await Promise.all([worker.exited, ...apis.map((api) => api.process.exited)]);
  for (const api of apis) await api.wire.close();
  await model.close();
  await database.drop();
}
