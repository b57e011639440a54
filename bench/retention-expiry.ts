// How long trace retention takes to expire 1,000,000 records, on PostgreSQL and on the embedded
// database, while 16 writers keep ingesting into the traces of current runs, and what it costs
// them: their records/s for a window before the sweep against during it. The due traces (spans,
// events and replay log, seeded by test/support/trace-seed.ts) ended 3 to 13 weeks ago, under a
// 7-day DELETE policy; 1 trace in 100 is pinned and must keep every row. On PostgreSQL the
// traces' weeks are partitioned as Dossier's start leaves them, so the sweep drops whole weeks.
// The embedded database expires about 3,500 records/s under that load (1,000,000 took 284 s), so it
// is measured on PGLITE_RECORDS (default 200,000) to keep `npm run bench` within minutes.
//   npm run bench:retention     (RECORDS=200000, PGLITE_RECORDS=1000000, WINDOW_S=…, DATABASES=postgres|pglite)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { migrate } from "../src/db/migrate.js";
import { type Database, openDatabase } from "../src/db/open-database.js";
import { TraceRetention } from "../src/domain/trace/retention/retention-service.js";
import { expireWeeks } from "../src/domain/trace/retention/week-expiry.js";
import { retentionWeekRules } from "../src/domain/trace/retention/week-expiry-rules.js";
import { appendEventsIn, ensureTrace, startSpanIn } from "../src/domain/trace/trace-writes.js";
import type { Prisma } from "../src/generated/prisma/client.js";
import { createPostgresDatabaseAt } from "../test/support/postgres.js";
import { RECORDS_PER_TRACE, seedTracesSql } from "../test/support/trace-seed.js";
import { printTable } from "./support.js";

const postgresUrl = process.env.TEST_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const RECORDS = Number(process.env.RECORDS ?? 1_000_000);
const PGLITE_RECORDS = Number(process.env.PGLITE_RECORDS ?? Math.min(RECORDS, 200_000));
const WINDOW_MS = Number(process.env.WINDOW_S ?? 15) * 1000;
const WRITERS = 16;
/** Events a writer appends per statement (a recorder's group commit), and statements per span. */
const EVENTS_PER_WRITE = 4;
const WRITES_PER_SPAN = 10;
const PINNED_EVERY = 100;
const OPERATOR = { days: 7, mode: "DELETE" } as const;

type Target = { name: string; db: Database; close(): Promise<void> };

async function postgresTarget(): Promise<Target> {
  const database = await createPostgresDatabaseAt(postgresUrl, "dossier_bench_retention");
  const db = await openDatabase({ kind: "postgres", url: database.url, timeouts: { statementMs: 0, queryMs: 0, idleInTransactionMs: 0 } });
  // Seeded into plain tables; Dossier's start (db.migrate) then partitions them by week.
  await db.withSession((session) => migrate(session));
  return {
    name: "PostgreSQL",
    db,
    async close() {
      await db.close();
      await database.drop();
    },
  };
}

async function pgliteTarget(): Promise<Target> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "dossier-bench-retention-"));
  const db = await openDatabase({ kind: "pglite", dataDir });
  await db.migrate();
  return {
    name: "embedded (PGlite)",
    db,
    async close() {
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Rows of the seeded traces still stored (their ids, unlike the writers' uuids and cuids, are r<i>, s<i>_<j>, e<i>_<j>_<k>). */
async function seededRows(db: Database, where = "true"): Promise<number> {
  const [row] = await db.prisma.$queryRawUnsafe<{ n: number }[]>(
    `SELECT ((SELECT count(*) FROM span WHERE id ~ '^s[0-9]+_' AND ${where.replaceAll("$trace", "trace_id")})
           + (SELECT count(*) FROM span_event WHERE id ~ '^e[0-9]+_' AND ${where.replaceAll("$trace", "'r' || split_part(substr(span_id, 2), '_', 1)")})
           + (SELECT count(*) FROM trace_change WHERE trace_id ~ '^r[0-9]+$' AND ${where.replaceAll("$trace", "trace_id")}))::int AS n`,
  );
  return row!.n;
}

/** 16 current runs, each with a trace its writer keeps appending to, as a run's recorder does. */
function startWriters(db: Database) {
  let records = 0;
  let stopped = false;
  const tx = db.prisma as unknown as Prisma.TransactionClient;
  const writer = async (n: number) => {
    const runId = `live-${n}`;
    await db.prisma.run.create({
      data: {
        id: runId,
        ownerId: "development",
        conversationId: "c0",
        agent: "researcher",
        question: "Still running?",
        status: "RUNNING",
        maxTurns: 50,
        tokenBudget: 1_000_000,
        deadlineSeconds: 3600,
        deadlineAt: new Date(Date.now() + 3_600_000),
        configuration: {},
        startedAt: new Date(),
      },
    });
    const traceId = await db.prisma.$transaction((t) => ensureTrace(t, runId));
    let spanId = "";
    for (let write = 0; !stopped; write++) {
      if (write % WRITES_PER_SPAN === 0) {
        ({ spanId } = await db.prisma.$transaction((t) => startSpanIn(t, { traceId, kind: "TOOL_CALL", name: `tool ${write}`, at: new Date() })));
        records += 2;
      }
      const events = Array.from({ length: EVENTS_PER_WRITE }, () => ({
        spanId,
        kind: "TOOL_OUTPUT" as const,
        payload: "a tool result of a few words",
        at: new Date(),
      }));
      await appendEventsIn(tx, traceId, events);
      records += 2 * EVENTS_PER_WRITE;
    }
  };
  const running = Promise.all(Array.from({ length: WRITERS }, (_, n) => writer(n)));
  return {
    /** Records written since the last call, and the seconds that took. */
    lap: (() => {
      let from = { records: 0, at: performance.now() };
      return () => {
        const now = { records, at: performance.now() };
        const lap = { records: now.records - from.records, seconds: (now.at - from.at) / 1000 };
        from = now;
        return lap;
      };
    })(),
    async stop() {
      stopped = true;
      await running;
    },
  };
}

async function bench(target: Target, records: number): Promise<string[]> {
  const { db } = target;
  const traces = Math.ceil(records / RECORDS_PER_TRACE);
  let started = performance.now();
  await db.withSession((session) => session.exec(seedTracesSql(traces, { endedDaysAgo: 21 })));
  if (db.kind === "postgres") await db.migrate();
  await db.prisma.$executeRawUnsafe(
    `INSERT INTO trace_pin (trace_id, reason, created_by, created_at)
     SELECT 'r' || i, 'kept for the benchmark', 'development', now() FROM generate_series(${PINNED_EVERY}, ${traces}, ${PINNED_EVERY}) i`,
  );
  const seededSeconds = (performance.now() - started) / 1000;
  const isPinned = `$trace IN (SELECT trace_id FROM trace_pin)`;
  const pinnedBefore = await seededRows(db, isPinned);
  const seeded = await seededRows(db);
  console.log(
    `${target.name}: ${seeded.toLocaleString("en")} records seeded in ${seededSeconds.toFixed(0)} s; writers run ${WINDOW_MS / 1000} s before the sweep`,
  );

  const at = new Date();
  const retention = new TraceRetention({
    prisma: db.prisma,
    operator: OPERATOR,
    now: () => at,
    instanceId: "bench",
    expireWeeks: db.kind === "postgres" ? (now, operator) => db.withSession((session) => expireWeeks(session, retentionWeekRules(operator), now)) : undefined,
  });
  const writers = startWriters(db);
  let before: { records: number; seconds: number };
  let during: { records: number; seconds: number };
  try {
    await sleep(2_000);
    writers.lap();
    await sleep(WINDOW_MS);
    before = writers.lap();
    started = performance.now();
    for (;;) {
      const report = await retention.sweep();
      if (report.expired === 0 && report.rows === 0) break;
    }
    during = writers.lap();
  } finally {
    await writers.stop();
  }
  const expireSeconds = (performance.now() - started) / 1000;
  const left = await seededRows(db);
  const [expiry] = await db.prisma.$queryRawUnsafe<{ expiredTraces: number }[]>(
    `SELECT count(*)::int AS "expiredTraces" FROM trace WHERE expired_at IS NOT NULL AND id ~ '^r[0-9]+$'`,
  );
  const pinnedAfter = await seededRows(db, isPinned);
  if (pinnedAfter !== pinnedBefore || left !== pinnedBefore) {
    throw new Error(`${target.name}: pinned rows ${pinnedBefore} before, ${pinnedAfter} after; ${left} seeded rows left`);
  }
  const rate = (lap: { records: number; seconds: number }) => lap.records / lap.seconds;
  return [
    target.name,
    (seeded - left).toLocaleString("en"),
    expiry!.expiredTraces.toLocaleString("en"),
    `${expireSeconds.toFixed(1)} s`,
    Math.round(rate(before)).toLocaleString("en"),
    Math.round(rate(during)).toLocaleString("en"),
    (rate(during) / rate(before)).toFixed(2),
    `${pinnedAfter.toLocaleString("en")} intact`,
  ];
}

async function run(open: () => Promise<Target>, records: number): Promise<string[]> {
  const target = await open();
  try {
    return await bench(target, records);
  } finally {
    await target.close();
  }
}

const DATABASES = (process.env.DATABASES ?? "postgres,pglite").split(",");
const header = ["database", "records expired", "traces", "time to expire", "writers rec/s before", "during", "during/before", "pinned rows"];
const rows: string[][] = [];
for (const [name, open, records] of [
  ["postgres", postgresTarget, RECORDS],
  ["pglite", pgliteTarget, PGLITE_RECORDS],
] as const) {
  if (!DATABASES.includes(name)) continue;
  rows.push(await run(open, records));
  printTable([header, ...rows]);
}
