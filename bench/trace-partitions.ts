// How long the migration of existing trace data into week partitions takes on PostgreSQL:
// 1,000,000 records (spans, events and replay log of traces written over ten weeks, seeded in a
// few statements by test/support/trace-seed.ts) in plain tables, then Dossier's start converts
// them (one transaction: copy into the weeks' partitions, indexes rebuilt, plain tables dropped).
//   npm run bench:partitions            (RECORDS=200000 for a shorter run)
import { performance } from "node:perf_hooks";
import { migrate } from "../src/db/migrate.js";
import { openDatabase } from "../src/db/open-database.js";
import { partitionTraceTables } from "../src/db/trace-partitions/partition-tables.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { RECORDS_PER_TRACE, seedTracesSql } from "../test/support/trace-seed.js";
import { printTable } from "./support.js";

const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const RECORDS = Number(process.env.RECORDS ?? 1_000_000);

async function main(): Promise<void> {
  const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench_partitions");
  const db = await openDatabase({ kind: "postgres", url: database.url, timeouts: { statementMs: 0, queryMs: 0, idleInTransactionMs: 0 } });
  try {
    await db.withSession((session) => migrate(session));
    const traces = Math.ceil(RECORDS / RECORDS_PER_TRACE);
    let started = performance.now();
    await db.withSession((session) => session.exec(seedTracesSql(traces)));
    const seededMs = performance.now() - started;
    const [size] = await db.prisma.$queryRawUnsafe<{ bytes: bigint }[]>(
      `SELECT (pg_total_relation_size('span') + pg_total_relation_size('span_event') + pg_total_relation_size('trace_change'))::bigint AS bytes`,
    );
    started = performance.now();
    const copied = await db.withSession((session) => partitionTraceTables(session));
    const convertedMs = performance.now() - started;
    const [weeks] = await db.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'span'::regclass`);
    printTable([
      ["records", "traces", "table size before", "seeding", "conversion", "records/s", "span partitions"],
      [
        copied.toLocaleString("en"),
        traces.toLocaleString("en"),
        `${(Number(size!.bytes) / 1024 / 1024).toFixed(0)} MB`,
        `${(seededMs / 1000).toFixed(1)} s`,
        `${(convertedMs / 1000).toFixed(1)} s`,
        Math.round(copied / (convertedMs / 1000)).toLocaleString("en"),
        String(weeks!.n),
      ],
    ]);
  } finally {
    await db.close();
    await database.drop();
  }
}

await main();
