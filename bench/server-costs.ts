// What requests cost the server, each server in its own process, next to a bare graphql-yoga
// `{ hello }` measured in the same run: the typical workspace read (workspace, current goal, a
// page of 20 linked runs) on a workspace with 20 links and on one with 2,000 — a page must cost
// the same at any size — admissions into one workspace, trace events written by 16 writers on
// one trace (as a run's recorder writes them, inside the server), and all of these at once, on
// PGlite and PostgreSQL, each server bundled and flagged as `npm start` runs it. The table gives
// throughput, p99, server CPU, the CPU of the PostgreSQL server on this machine and SQL statements
// per request (per event; the trace writers' database CPU includes their 1 s warm-up); below it,
// resident memory.
//   npm run bench:server   (BENCH_DATABASES=PGlite or PostgreSQL: one only; BENCH_SCENARIOS=reads:
//                           the baseline and the two reads only; BENCH_CPU_PROF=<dir>: each server
//                           writes a V8 CPU profile there; BENCH_NODE_FLAGS: more flags)
import { buildDossier } from "../scripts/build.mjs";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { CLIENTS, type Measured, measure, post, postgresCpuMs, type Request, SECONDS, serve, WRITERS } from "./server-load.js";
import { printTable, TYPICAL_WORKSPACE_READ } from "./support.js";

const LARGE = Number(process.env.BENCH_LINKS ?? 2_000);
const readsOnly = process.env.BENCH_SCENARIOS === "reads";
const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

/** A workspace with `links` admitted runs, each linked to it. */
async function workspaceWith(url: string, links: number): Promise<string> {
  const created = await post(
    url,
    `mutation { createWorkspace(input: { title: "Bench", goal: "Measure Dossier" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`,
  );
  const workspaceId = created.createWorkspace.workspace.id as string;
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < links) {
        next += 1;
        await post(url, ADMIT, { input: { workspaceId, question: `question ${next}` } });
      }
    }),
  );
  return workspaceId;
}

const ADMIT = `mutation($input: AdmitRunInput!) { admitRun(input: $input) { __typename } }`;

type Row = string[];
const row = (name: string, m: Measured, base: Measured, postgres = false): Row => [
  name,
  `${m.perSecond.toFixed(0)}/s`,
  `${m.p99.toFixed(1)} ms`,
  `${m.cpuMs.toFixed(2)} ms`,
  postgres && m.databaseCpuMs !== undefined ? `${m.databaseCpuMs.toFixed(2)} ms` : "—",
  m.statements.toFixed(1),
  `${(m.perSecond / base.perSecond).toFixed(3)}× throughput, ${(m.p99 / base.p99).toFixed(1)}× p99`,
];

async function main(): Promise<void> {
  await buildDossier(["bench/server-process.ts"]);
  const rows: Row[] = [["scenario", "throughput", "p99", "server CPU/request", "PostgreSQL CPU/request", "SQL/request", "against the baseline"]];
  const baseline = await serve("baseline");
  const base = await measure(baseline, { query: "{ hello }" });
  await baseline.stop();
  rows.push(row("baseline: bare graphql-yoga { hello }", base, base));
  const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench_pages");
  const growth: string[] = [];
  const memory: string[] = [];
  try {
    const only = process.env.BENCH_DATABASES?.split(",");
    const targets = (
      [
        ["PGlite", "pglite"],
        ["PostgreSQL", database.url],
      ] as const
    ).filter(([label]) => !only || only.includes(label));
    for (const [label, target] of targets) {
      const server = await serve(target);
      const onPostgres = label === "PostgreSQL";
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const idle = await server.stats();
      const small = await workspaceWith(server.url, 20);
      const large = await workspaceWith(server.url, LARGE);
      // A database that has just taken 2,000 rows has no statistics on them yet; within a minute
      // autovacuum (PostgreSQL) or within five Dossier's analyzer (PGlite) gives it some.
      await server.analyze();
      const read = (id: string): Request => ({ query: TYPICAL_WORKSPACE_READ, variables: { id } });
      let admitted = 0;
      const admit = (): Request => ({ query: ADMIT, variables: { input: { workspaceId: small, question: `admitted ${(admitted += 1)}` } } });
      const few = await measure(server, read(small));
      const many = await measure(server, read(large));
      rows.push(row(`workspace + goal + page of 20 runs, 20 links, ${label}`, few, base, onPostgres));
      rows.push(row(`the same, ${LARGE.toLocaleString("en")} links, ${label}`, many, base, onPostgres));
      growth.push(
        `${label}: a page on ${LARGE.toLocaleString("en")} links costs ${(many.cpuMs / few.cpuMs).toFixed(2)}× the server CPU of a page on 20 (throughput ${(few.perSecond / many.perSecond).toFixed(2)}×)`,
      );
      if (readsOnly) {
        await server.stop();
        continue;
      }
      const admissions = await measure(server, admit);
      const traced = await post(server.url, `mutation { admitRun(input: { question: "trace writes" }) { ... on AdmitRunSuccess { run { id } } } }`);
      const databaseBefore = postgresCpuMs();
      const written = await server.writeTrace(
        Buffer.from(traced.admitRun.run.id as string, "base64")
          .toString()
          .split(":")[1]!,
      );
      const databaseAfter = postgresCpuMs();
      const events: Measured = {
        perSecond: written.events / SECONDS,
        p99: written.p99,
        cpuMs: written.cpuMicros / 1000 / written.events,
        statements: written.statements / written.events,
        databaseCpuMs: databaseBefore !== undefined && databaseAfter !== undefined ? (databaseAfter - databaseBefore) / written.events : undefined,
      };
      rows.push(row(`admitRun, ${CLIENTS} clients into one workspace, ${label}`, admissions, base, onPostgres));
      rows.push(row(`trace events written, ${WRITERS} writers on one trace, ${label} (per event)`, events, base, onPostgres));
      // Everything at once: CLIENTS clients each reading either workspace or admitting, in turn,
      // while WRITERS writers record trace events inside the server.
      const mixedTrace = await post(server.url, `mutation { admitRun(input: { question: "mixed load" }) { ... on AdmitRunSuccess { run { id } } } }`);
      const background = server.writeTrace(
        Buffer.from(mixedTrace.admitRun.run.id as string, "base64")
          .toString()
          .split(":")[1]!,
      );
      let turn = 0;
      const mixed = await measure(server, () => [() => read(small), () => read(large), admit][turn++ % 3]!());
      await background;
      rows.push(row(`mixed: reads of both workspaces and admissions, ${CLIENTS} clients, with ${WRITERS} trace writers, ${label}`, mixed, base, onPostgres));
      const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
      memory.push(
        `${label}: server resident memory ${mb(idle.rss)} idle after start, at most ${mb((await server.stats()).maxRss)} through these scenarios (the mixed load last)`,
      );
      await server.stop();
    }
  } finally {
    await database.drop();
  }
  printTable(rows);
  console.log(`\n${growth.join("\n")}\n${memory.join("\n")}`);
  console.log(`${CLIENTS} concurrent clients, ${SECONDS} s per scenario; each server in its own process, the load generator in this one.`);
}

await main();
process.exit(0);
