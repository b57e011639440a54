// Trace storage partitioned by week on PostgreSQL: the weeks ahead exist before anything is
// written to them; expiring a week drops its partitions, after the rows of the traces that stay
// (pinned, not yet due) moved to the retained partition and summaries kept their skeleton; a live
// trace subscriber sees every update while a week expires; a sweep killed mid-detach, or inside
// the transaction that moves pinned rows to the retained partition, completes when it runs again,
// with no pinned row lost.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { TraceUpdatesDocument } from "../../sdk/generated/graphql.js";
import { createClient } from "../../sdk/client.js";
import type { Database } from "../../src/db/open-database.js";
import { partitionName, periodStart, PERIOD_MS, WEEKS_AHEAD } from "../../src/db/trace-partitions/partition-layout.js";
import { ensureWeeksAhead, weekPartitions } from "../../src/db/trace-partitions/partition-tables.js";
import { type ScriptStep, ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { expireWeeks } from "../../src/domain/trace/retention/week-expiry.js";
import { retentionWeekRules } from "../../src/domain/trace/retention/week-expiry-rules.js";
import { backends, postgresAdminUrl } from "../support/databases.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { spawnTs } from "../support/processes.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString().split(":")[1]!;
const planning = (n: number, delayMs = 0): ScriptStep[] => [
  ...Array.from({ length: n }, (_, i) => ({ toolCalls: [{ name: "task_list", arguments: { action: "add", title: `step ${i}` } }], delayMs })),
  { content: "planned", delayMs },
];
const DAY_MS = 24 * 60 * 60 * 1000;
const rules = retentionWeekRules({ days: 7, mode: "DELETE" });
/** The week three weeks back: old enough for a 7-day policy to make its traces due. */
const oldWeek = () => new Date(periodStart(new Date()).getTime() - 3 * PERIOD_MS);

/** Rows of a trace, by table, and which partitions hold them. */
async function rowsOf(db: Database, traceId: string) {
  const [row] = await db.prisma.$queryRawUnsafe<{ spans: number; events: number; changes: number; attributes: number; retained: boolean }[]>(
    `SELECT (SELECT count(*)::int FROM span WHERE trace_id = $1) AS spans,
            (SELECT count(*)::int FROM span_event WHERE span_id IN (SELECT id FROM span WHERE trace_id = $1)) AS events,
            (SELECT count(*)::int FROM trace_change WHERE trace_id = $1) AS changes,
            (SELECT count(*)::int FROM span WHERE trace_id = $1 AND attributes <> '{}') AS attributes,
            (SELECT bool_and(period = 'infinity') FROM span WHERE trace_id = $1) AS retained`,
    traceId,
  );
  return row!;
}

/** As if the trace had been written (and ended) in `week`: its rows' period and its end move there. */
async function writtenIn(db: Database, traceIds: string[], week: Date, endedAt: Date) {
  const at = new Date(week.getTime() + DAY_MS).toISOString();
  await db.prisma.$executeRawUnsafe(
    `UPDATE span_event SET period = $2::timestamptz WHERE span_id IN (SELECT id FROM span WHERE trace_id = ANY($1::text[]))`,
    traceIds,
    at,
  );
  await db.prisma.$executeRawUnsafe(`UPDATE trace_change SET period = $2::timestamptz WHERE trace_id = ANY($1::text[])`, traceIds, at);
  await db.prisma.$executeRawUnsafe(`UPDATE span SET period = $2::timestamptz WHERE trace_id = ANY($1::text[])`, traceIds, at);
  await db.prisma.$executeRawUnsafe(`UPDATE trace SET ended_at = $2 WHERE id = ANY($1::text[])`, traceIds, endedAt);
}

const exists = async (db: Database, name: string) =>
  (await db.prisma.$queryRawUnsafe<{ present: boolean }[]>(`SELECT to_regclass($1) IS NOT NULL AS present`, `public.${name}`))[0]!.present;

describe.runIf(backends.includes("postgres"))("trace storage partitioned by week on PostgreSQL", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function start(steps: ScriptStep[], listen = false) {
    t = await startTestApp("postgres", {
      listen,
      runtime: { model: new ScriptedModel({ name: "trace", steps }), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-partitions-")) },
    });
    return t;
  }

  /** Four ended runs written three weeks ago: one pinned, one due (DELETE), one due as a summary, one ended just now (not due). */
  async function oldTraces(app: TestApp) {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { run } = await admit(app.client, { question: `old run ${i}` });
      await settled(app.client, run.id, 90_000);
      ids.push(rawId(run.id));
    }
    const [pinned, deleted, summary, recent] = ids as [string, string, string, string];
    const db = app.app.db;
    const workspace = rawId((await createWorkspace(app.client)).id);
    await db.prisma.$executeRawUnsafe(`UPDATE run SET workspace_id = $1 WHERE id = $2`, workspace, summary);
    await db.prisma.$executeRawUnsafe(
      `INSERT INTO retention_policy (id, principal_id, workspace_id, days, mode) VALUES ('summaries', 'development', $1, 7, 'KEEP_SUMMARY')`,
      workspace,
    );
    await db.prisma.$executeRawUnsafe(`INSERT INTO trace_pin (trace_id, reason, created_by) VALUES ($1, 'evidence', 'development')`, pinned);
    const week = oldWeek();
    await writtenIn(db, [pinned, deleted, summary], week, new Date(week.getTime() + DAY_MS));
    await writtenIn(db, [recent], week, new Date());
    // The rows landed in the default partition (no partition covers that week); maintenance gives them their week.
    const created = await db.withSession((session) => ensureWeeksAhead(session));
    expect(created).toEqual(expect.arrayContaining(["span", "span_event", "trace_change"].map((table) => partitionName(table as "span", week))));
    const before = Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await rowsOf(db, id)] as const)));
    return { pinned, deleted, summary, recent, week, before };
  }

  it("the current week and the next ones exist before anything is written to them, on each trace table", async () => {
    const app = await start(planning(1));
    const thisWeek = periodStart(new Date());
    const expected = Array.from({ length: WEEKS_AHEAD + 1 }, (_, i) => new Date(thisWeek.getTime() + i * PERIOD_MS));
    await app.app.db.withSession(async (session) => {
      for (const table of ["span", "span_event", "trace_change"] as const) {
        const weeks = (await weekPartitions(session, table)).map((week) => week.start.toISOString());
        expect(weeks).toEqual(expect.arrayContaining(expected.map((week) => week.toISOString())));
        expect(await exists(app.app.db, `${table}_retained`)).toBe(true);
        expect(await exists(app.app.db, `${table}_default`)).toBe(true);
      }
    });
    // A run's rows land in this week's partitions.
    const { run } = await admit(app.client, { question: "now" });
    await settled(app.client, run.id, 90_000);
    const [where] = await app.app.db.prisma.$queryRawUnsafe<{ partition: string }[]>(
      `SELECT DISTINCT tableoid::regclass::text AS partition FROM span WHERE trace_id = $1`,
      rawId(run.id),
    );
    expect(where?.partition).toBe(partitionName("span", thisWeek));
  }, 60_000);

  it("expiring a week drops its partitions; pinned and not-yet-due traces keep every row, summaries their skeleton", async () => {
    const app = await start(planning(2));
    const { pinned, deleted, summary, recent, week, before } = await oldTraces(app);
    const db = app.app.db;
    const report = await db.withSession((session) => expireWeeks(session, rules));
    expect(report.weeks.map((w) => w.start.toISOString())).toEqual([week.toISOString()]);
    expect(report.weeks[0]!.expired).toBe(2);
    for (const table of ["span", "span_event", "trace_change"] as const) expect(await exists(db, partitionName(table, week))).toBe(false);

    expect(await rowsOf(db, pinned)).toEqual({ ...before[pinned], retained: true });
    expect(await rowsOf(db, recent)).toEqual({ ...before[recent], retained: true });
    expect(await rowsOf(db, deleted)).toEqual({ spans: 0, events: 0, changes: 0, attributes: 0, retained: null });
    expect(await rowsOf(db, summary)).toEqual({ spans: before[summary]!.spans, events: 0, changes: 0, attributes: 0, retained: true });
    const traces = await db.prisma.trace.findMany({ where: { id: { in: [pinned, deleted, summary, recent] } }, select: { id: true, expiredMode: true } });
    expect(Object.fromEntries(traces.map((trace) => [trace.id, trace.expiredMode]))).toEqual({
      [pinned]: null,
      [recent]: null,
      [deleted]: "DELETE",
      [summary]: "KEEP_SUMMARY",
    });
    // Nothing is left to expire: a second sweep does nothing.
    expect((await db.withSession((session) => expireWeeks(session, rules))).weeks).toEqual([]);
  }, 120_000);

  it("a live traceUpdates subscriber on a current run sees every update, in order, while a week expires", async () => {
    const app = await start(planning(6, 200), true);
    await oldTraces(app);
    // Another run, live while the old week expires.
    const { run } = await admit(app.client, { question: "live" });
    const seqs: number[] = [];
    const streamed = (async () => {
      for await (const { traceUpdates } of createClient({ url: app.server!.url }).subscribe(TraceUpdatesDocument, { runId: run.id })) {
        seqs.push(Number(traceUpdates.seq));
        if (traceUpdates.kind === "TRACE_ENDED") break;
      }
    })();
    await waitUntil(() => (seqs.length > 0 ? true : undefined), 20_000);
    const report = await app.app.db.withSession((session) => expireWeeks(session, rules));
    expect(report.weeks).toHaveLength(1);
    await streamed;
    await settled(app.client, run.id, 90_000);
    const logged = await app.app.db.prisma.traceChange.findMany({ where: { traceId: rawId(run.id) }, orderBy: { seq: "asc" }, select: { seq: true } });
    expect(seqs).toEqual(logged.map((change) => change.seq));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  }, 120_000);

  it("a sweep killed mid-detach leaves no pinned row lost, and the next sweep completes", async () => {
    const app = await start(planning(2));
    const { pinned, recent, deleted, week, before } = await oldTraces(app);
    const db = app.app.db;
    const url = await databaseUrl(db);
    // Holding the week's event partition keeps the sweep retrying its detach after the span partition went.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    await holder.query("BEGIN");
    await holder.query(`LOCK TABLE "${partitionName("span_event", week)}" IN ACCESS SHARE MODE`);
    const sweep = spawnTs("test/support/week-expiry-process.ts", { env: { DATABASE_URL: url, TRACE_RETENTION_DAYS: "7" } });
    try {
      await sweep.waitForOutput(/expiring/, 60_000);
      await waitUntil(async () => ((await exists(db, partitionName("span", week))) ? undefined : true), 60_000, 100);
      expect(await exists(db, partitionName("span_event", week))).toBe(true);
      sweep.child.kill("SIGKILL");
      expect((await sweep.exited).signal).toBe("SIGKILL");
    } finally {
      await holder.query("ROLLBACK");
      await holder.end();
    }
    // The dead process's advisory lock goes with its session, which PostgreSQL ends once the
    // statement it was waiting in (the detach the holder's lock held) returns to find no client.
    await waitUntil(async () => ((await advisoryLocksHeld(url)) === 0 ? true : undefined), 30_000, 50);
    // Then the next sweep runs and finishes.
    const report = await db.withSession((session) => expireWeeks(session, rules));
    expect(report.busy).toBe(false);
    for (const table of ["span", "span_event", "trace_change"] as const) expect(await exists(db, partitionName(table, week))).toBe(false);
    expect(await rowsOf(db, pinned)).toEqual({ ...before[pinned], retained: true });
    expect(await rowsOf(db, recent)).toEqual({ ...before[recent], retained: true });
    expect(await rowsOf(db, deleted)).toMatchObject({ spans: 0, events: 0, changes: 0 });
  }, 180_000);

  it("a sweep killed inside the week's move transaction leaves every pinned row where it was, and the next sweep completes", async () => {
    const app = await start(planning(2));
    const { pinned, recent, deleted, week, before } = await oldTraces(app);
    const db = app.app.db;
    const url = await databaseUrl(db);
    // A lock on one of the pinned trace's spans holds the move's last UPDATE (span), after it
    // moved that trace's events and replay log in the same, uncommitted, transaction.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    await holder.query("BEGIN");
    await holder.query(`SELECT id FROM span WHERE trace_id = $1 FOR UPDATE`, [pinned]);
    const sweep = spawnTs("test/support/week-expiry-process.ts", { env: { DATABASE_URL: url, TRACE_RETENTION_DAYS: "7" } });
    const moving = async () => {
      const [row] = await db.prisma.$queryRawUnsafe<{ waiting: boolean }[]>(
        `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE span SET period%') AS waiting`,
      );
      return row?.waiting ? true : undefined;
    };
    try {
      await sweep.waitForOutput(/expiring/, 60_000);
      await waitUntil(moving, 60_000, 50);
      sweep.child.kill("SIGKILL");
      expect((await sweep.exited).signal).toBe("SIGKILL");
    } finally {
      await holder.query("ROLLBACK");
      await holder.end();
    }
    // The dead process's transaction is rolled back: nothing moved, nothing expired, the week is whole.
    await waitUntil(async () => ((await moving()) ? undefined : true), 30_000, 50);
    expect(await rowsOf(db, pinned)).toEqual(before[pinned]);
    expect(await rowsOf(db, deleted)).toEqual(before[deleted]);
    expect(await db.prisma.trace.count({ where: { id: { in: [pinned, deleted] }, expiredAt: { not: null } } })).toBe(0);
    for (const table of ["span", "span_event", "trace_change"] as const) expect(await exists(db, partitionName(table, week))).toBe(true);
    // Once PostgreSQL ended the dead process's session (and its advisory lock), the next sweep finishes the week.
    const report = await waitUntil(
      async () => {
        const tried = await db.withSession((session) => expireWeeks(session, rules));
        return tried.busy ? undefined : tried;
      },
      30_000,
      200,
    );
    expect(report.weeks.map((w) => w.start.toISOString())).toEqual([week.toISOString()]);
    for (const table of ["span", "span_event", "trace_change"] as const) expect(await exists(db, partitionName(table, week))).toBe(false);
    expect(await rowsOf(db, pinned)).toEqual({ ...before[pinned], retained: true });
    expect(await rowsOf(db, recent)).toEqual({ ...before[recent], retained: true });
    expect(await rowsOf(db, deleted)).toMatchObject({ spans: 0, events: 0, changes: 0 });
  }, 180_000);
});

async function databaseUrl(db: Database): Promise<string> {
  const [row] = await db.prisma.$queryRawUnsafe<{ name: string }[]>("SELECT current_database() AS name");
  const url = new URL(postgresAdminUrl());
  url.pathname = `/${row!.name}`;
  return url.toString();
}

/** Advisory locks granted on the database at `url` (the week sweep's lock, while a sweep's session lives). */
async function advisoryLocksHeld(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()",
    );
    return Number(rows[0]!.n);
  } finally {
    await client.end();
  }
}
