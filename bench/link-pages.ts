// A page of 20 links on a workspace that has just received 2,000 links, before any ANALYZE has run,
// against the same page on a workspace of 20 (issue 43), on PostgreSQL: the server bundled and in
// its own process (bench/server-load.ts), the typical workspace read (workspace, current goal, a
// page of 20 linked runs) on each, measured in turn, three rounds interleaved, medians. Autovacuum
// is off for the link table of this benchmark's own database, so no statistics of the 2,000 links
// exist while it measures; then the same after ANALYZE. The table gives throughput, p99, server CPU,
// PostgreSQL CPU and SQL per request, and the large workspace's ratio to the small one.
//   npm run bench:links
import { Client } from "pg";
import { buildDossier } from "../scripts/build.mjs";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { CLIENTS, comparedRow, type Measured, measure, medianOf, post, SECONDS, serve } from "./server-load.js";
import { printTable, TYPICAL_WORKSPACE_READ } from "./support.js";

const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const ROUNDS = 3;
const LARGE = 2_000;

/** A workspace with `links` runs of the development principal linked to it, inserted in a few statements. */
async function workspaceWith(url: string, pg: Client, links: number): Promise<string> {
  const created = await post(
    url,
    `mutation { createWorkspace(input: { title: "Bench", goal: "Measure Dossier" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`,
  );
  const workspaceId = created.createWorkspace.workspace.id as string;
  const id = Buffer.from(workspaceId, "base64url").toString().split(":")[1]!;
  await pg.query(`INSERT INTO conversation (id, owner_id, title) VALUES ($1, 'development', 'bench')`, [id]);
  await pg.query(
    `INSERT INTO run (id, owner_id, conversation_id, workspace_id, agent, question, status, max_turns, token_budget, deadline_seconds, deadline_at, configuration, created_at)
     SELECT $1 || '-r' || i, 'development', $1, $1, 'researcher', 'question ' || i, 'SUCCEEDED', 20, 1000, 60, now(), '{}', now() - i * interval '1 second'
       FROM generate_series(1, $2::int) i`,
    [id, links],
  );
  await pg.query(
    `INSERT INTO workspace_link (id, workspace_id, target_kind, target_id, created_at)
     SELECT $1 || '-l' || i, $1, 'RUN', $1 || '-r' || i, now() - i * interval '1 second' FROM generate_series(1, $2::int) i`,
    [id, links],
  );
  return workspaceId;
}

async function main(): Promise<void> {
  await buildDossier(["bench/server-process.ts"]);
  const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench_links");
  const server = await serve(database.url);
  const pg = new Client({ connectionString: database.url });
  try {
    await pg.connect();
    // The development principal exists once it has made a request.
    await post(server.url, "{ runsCount }");
    await pg.query(`ALTER TABLE workspace_link SET (autovacuum_enabled = false)`);
    const small = await workspaceWith(server.url, pg, 20);
    const large = await workspaceWith(server.url, pg, LARGE);
    const read = (id: string) => ({ query: TYPICAL_WORKSPACE_READ, variables: { id } });
    const rounds = async () => {
      const few: Measured[] = [];
      const many: Measured[] = [];
      for (let round = 0; round < ROUNDS; round += 1) {
        few.push(await measure(server, read(small)));
        many.push(await measure(server, read(large)));
      }
      return { few: medianOf(few), many: medianOf(many), ratios: few.map((f, i) => f.perSecond / many[i]!.perSecond) };
    };
    const fresh = await rounds();
    const { rows: analysed } = await pg.query(`SELECT last_analyze, last_autoanalyze FROM pg_stat_user_tables WHERE relname = 'workspace_link'`);
    if (analysed[0].last_analyze || analysed[0].last_autoanalyze) throw new Error("the link table was analysed while the benchmark measured it fresh");
    await pg.query(`ANALYZE workspace_link`);
    const analysedRounds = await rounds();
    printTable([
      ["typical workspace read (PostgreSQL)", "throughput", "p99", "server CPU/request", "PostgreSQL CPU/request", "SQL/request", "against 20 links"],
      comparedRow("20 links, before ANALYZE", fresh.few, fresh.few),
      comparedRow(`${LARGE.toLocaleString("en")} links just inserted, before ANALYZE`, fresh.many, fresh.few),
      comparedRow("20 links, after ANALYZE", analysedRounds.few, analysedRounds.few),
      comparedRow(`${LARGE.toLocaleString("en")} links, after ANALYZE`, analysedRounds.many, analysedRounds.few),
    ]);
    const each = (ratios: number[]) => ratios.map((r) => `${r.toFixed(2)}×`).join(", ");
    console.log(
      `\ntime of a page on ${LARGE.toLocaleString("en")} links / on 20, each round: before ANALYZE ${each(fresh.ratios)}; after ${each(analysedRounds.ratios)}`,
    );
    console.log(`${CLIENTS} concurrent clients, ${SECONDS} s per scenario, ${ROUNDS} rounds interleaved, medians; the server in its own process.`);
  } finally {
    await pg.end();
    await server.stop();
    await database.drop();
  }
}

await main();
process.exit(0);
