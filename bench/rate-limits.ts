// What request rate limits cost: the typical workspace read and admissions, on PGlite and
// PostgreSQL, each against three servers of the same build in their own processes — rate limits
// off (the baseline), buckets in the server's process, buckets in Redis (as with REDIS_URL set) —
// at a rate no client reaches, so every request takes a token and none is refused. The three are
// measured in turn, in a rotating order, ROUNDS times; the table gives medians over the rounds and
// the ratio of each to the baseline of the same rounds.
//   npm run bench:rate-limits   (BENCH_DATABASES=PGlite or PostgreSQL: one only; BENCH_ROUNDS, BENCH_SECONDS)
import { buildDossier } from "../scripts/build.mjs";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { CLIENTS, type Measured, measure, post, type Request, type Server, serve } from "./server-load.js";
import { printTable, TYPICAL_WORKSPACE_READ } from "./support.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

const MODES = [
  ["off", {}],
  ["in the process", { BENCH_RATE_LIMITS: "process" }],
  ["in Redis", { BENCH_RATE_LIMITS: "redis", REDIS_URL: redisUrl }],
] as const;

const ADMIT = `mutation($input: AdmitRunInput!) { admitRun(input: $input) { __typename } }`;

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function workspaceOn(server: Server): Promise<string> {
  const created = await post(
    server.url,
    `mutation { createWorkspace(input: { title: "Bench", goal: "Measure Dossier" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`,
  );
  const workspaceId = created.createWorkspace.workspace.id as string;
  for (let i = 0; i < 20; i += 1) await post(server.url, ADMIT, { input: { workspaceId, question: `question ${i}` } });
  return workspaceId;
}

type Scenario = { name: string; request: (mode: number) => Request | (() => Request) };

async function compare(label: string, target: (mode: number) => Promise<string>, rows: string[][]): Promise<void> {
  const servers: Server[] = [];
  try {
    for (const [mode, [, env]] of MODES.entries()) servers.push(await serve(await target(mode), env));
    const workspaces = await Promise.all(servers.map(workspaceOn));
    let admitted = 0;
    const scenarios: Scenario[] = [
      { name: `workspace + goal + page of 20 runs, ${label}`, request: (mode) => ({ query: TYPICAL_WORKSPACE_READ, variables: { id: workspaces[mode] } }) },
      {
        name: `admitRun, ${CLIENTS} clients into one workspace, ${label}`,
        request: (mode) => () => ({ query: ADMIT, variables: { input: { workspaceId: workspaces[mode], question: `admitted ${(admitted += 1)}` } } }),
      },
    ];
    for (const scenario of scenarios) {
      const results: Measured[][] = MODES.map(() => []);
      for (let round = 0; round < ROUNDS; round += 1) {
        // A rotating order: no mode is always measured first, on a cooler machine, or last.
        for (let i = 0; i < MODES.length; i += 1) {
          const mode = (round + i) % MODES.length;
          results[mode]!.push(await measure(servers[mode]!, scenario.request(mode), SECONDS));
        }
      }
      const medians = results.map((measured) => ({
        perSecond: median(measured.map((m) => m.perSecond)),
        p99: median(measured.map((m) => m.p99)),
        cpuMs: median(measured.map((m) => m.cpuMs)),
        statements: median(measured.map((m) => m.statements)),
      }));
      // Each round's ratio to the baseline of the same round, then the median of those ratios.
      const ratio = (mode: number, of: (m: Measured) => number) => median(results[mode]!.map((m, round) => of(m) / of(results[0]![round]!)));
      for (const [mode, [name]] of MODES.entries()) {
        const m = medians[mode]!;
        rows.push([
          `${scenario.name}, rate limits ${name}`,
          `${m.perSecond.toFixed(0)}/s`,
          `${m.p99.toFixed(1)} ms`,
          `${m.cpuMs.toFixed(2)} ms`,
          m.statements.toFixed(1),
          mode === 0
            ? "baseline"
            : `${ratio(mode, (x) => x.perSecond).toFixed(3)}× throughput, ${ratio(mode, (x) => x.p99).toFixed(2)}× p99, ${ratio(mode, (x) => x.cpuMs).toFixed(2)}× CPU`,
        ]);
      }
    }
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

async function main(): Promise<void> {
  await buildDossier(["bench/server-process.ts"]);
  const rows = [["scenario", "throughput", "p99", "server CPU/request", "SQL/request", "against rate limits off (median of the rounds' ratios)"]];
  const only = process.env.BENCH_DATABASES?.split(",");
  if (!only || only.includes("PGlite")) await compare("PGlite", async () => "pglite", rows);
  if (!only || only.includes("PostgreSQL")) {
    const databases = await Promise.all(MODES.map((_, mode) => createPostgresDatabaseAt(postgresUrl, `dossier_bench_rate_${mode}`)));
    try {
      await compare("PostgreSQL", async (mode) => databases[mode]!.url, rows);
    } finally {
      await Promise.all(databases.map((database) => database.drop()));
    }
  }
  printTable(rows);
  console.log(
    `\n${CLIENTS} concurrent clients without a credential (one bucket: their address, the hottest key there is), ${SECONDS} s per measurement, ${ROUNDS} rounds; each server in its own process, the load generator in this one.`,
  );
}

await main();
process.exit(0);
