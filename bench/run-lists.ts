// A filtered run list on 100,000 runs (issue 39) against the unfiltered page, on PostgreSQL: the
// server bundled and in its own process (bench/server-load.ts), 100,000 runs of five principals
// seeded in one statement (test/support/run-seed.ts) and analysed, then the development
// principal's newest 20 runs with their count, unfiltered and filtered (a status, a tag and a
// metadata key: a dashboard's "my team's finished runs"), measured in turn, three rounds
// interleaved; the table gives each round's median throughput, p99, server CPU, PostgreSQL CPU
// and SQL statements per request, and the filtered list's ratio to the unfiltered one.
//   npm run bench:lists
import { Client } from "pg";
import { buildDossier } from "../scripts/build.mjs";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { SEEDED_RUNS, seedRunsSql } from "../test/support/run-seed.js";
import { CLIENTS, comparedRow, type Measured, measure, medianOf, post, SECONDS, serve } from "./server-load.js";
import { printTable } from "./support.js";

const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const ROUNDS = 3;

const PAGE = /* GraphQL */ `
  query ($filter: RunFilter) {
    runs(filter: $filter, first: 20) { totalCount countCapped edges { node { id status question tags metadata createdAt } } }
  }
`;
const FILTER = { status: ["SUCCEEDED"], tagsAny: ["team3"], metadata: { team: "team3" } };

async function main(): Promise<void> {
  await buildDossier(["bench/server-process.ts"]);
  const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench_lists");
  const server = await serve(database.url);
  try {
    // The development principal exists once it has made a request.
    await post(server.url, "{ runsCount }");
    const pg = new Client({ connectionString: database.url });
    await pg.connect();
    await pg.query(seedRunsSql());
    await pg.end();
    const unfiltered: Measured[] = [];
    const filtered: Measured[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      unfiltered.push(await measure(server, { query: PAGE }));
      filtered.push(await measure(server, { query: PAGE, variables: { filter: FILTER } }));
    }
    const plain = medianOf(unfiltered);
    const narrowed = medianOf(filtered);
    printTable([
      ["scenario (PostgreSQL)", "throughput", "p99", "server CPU/request", "PostgreSQL CPU/request", "SQL/request", "against the unfiltered page"],
      comparedRow(`unfiltered page of 20 runs + totalCount, ${SEEDED_RUNS.toLocaleString("en")} runs`, plain, plain),
      comparedRow(`filtered list on ${SEEDED_RUNS.toLocaleString("en")} runs (status + tagsAny + metadata) + totalCount`, narrowed, plain),
    ]);
    const each = (all: Measured[]) => all.map((m) => `${m.perSecond.toFixed(0)}/s`).join(", ");
    console.log(`\nrounds, unfiltered: ${each(unfiltered)}; filtered: ${each(filtered)}`);
    console.log(`${CLIENTS} concurrent clients, ${SECONDS} s per scenario, ${ROUNDS} rounds interleaved, medians; the server in its own process.`);
  } finally {
    await server.stop();
    await database.drop();
  }
}

await main();
process.exit(0);
