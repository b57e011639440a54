// Runs survive a database that hangs, fails or kills their sessions (issue 34, points 2, 3 and 8),
// with real processes on PostgreSQL: a server that only serves the API, and worker processes
// (test/support/queue-worker.ts) each reaching PostgreSQL through a fault-injection proxy of its
// own (test/support/fault-proxy.ts), so one instance's link can hang while the other's works.
// Leases are short (a few seconds) to keep the waits short.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createClient, type DossierClient } from "../../sdk/client.js";
import { TraceUpdatesDocument } from "../../sdk/generated/graphql.js";
import { backends, createMigratedPostgresDatabase, createPostgresDatabase } from "../support/databases.js";
import { type FaultProxy, startFaultProxy } from "../support/fault-proxy.js";
import { admit } from "../support/fixtures.js";
import { killAll, markerLines, type Spawned, spawnBuilt, spawnTs } from "../support/processes.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Worker = { process: Spawned; pid: number; id: string; proxy?: FaultProxy };
type ToolEvent = { event: "start" | "end" | "abort"; runId: string; pid: number; at: number };

const redisUrl = inject("redisUrl");

/**
 * `serverRedis`: the API server reaches Redis through a fault proxy (the workers directly).
 * `workers`: the environments of workers started with the server (`started`), not after it.
 */
async function deployment(env: Record<string, string>, { serverRedis, workers = [] }: { serverRedis?: FaultProxy; workers?: Record<string, string>[] } = {}) {
  const database = await createMigratedPostgresDatabase();
  cleanups.push(() => database.drop());
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-faults-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const shared = { DATABASE_URL: database.url, MARKER_FILE: path.join(dir, "marker"), EVENTS_FILE: path.join(dir, "events"), LOG_LEVEL: "info", ...env };
  const server = spawnBuilt("src/main.ts", {
    env: {
      ...shared,
      PORT: "0",
      AUTH_REQUIRED: "false",
      IN_PROCESS_WORKER: "false",
      DATA_DIR: path.join(dir, "server"),
      ...(serverRedis ? { REDIS_URL: serverRedis.url } : {}),
    },
  });
  running.push(server);
  /** A worker process; `proxied`: its link to PostgreSQL goes through a fault proxy of its own. */
  const worker = async (workerEnv: Record<string, string> = {}, { proxied = false } = {}): Promise<Worker> => {
    const proxy = proxied ? await startFaultProxy(database.url) : undefined;
    if (proxy) cleanups.push(() => proxy.close());
    const process = spawnTs("test/support/queue-worker.ts", { env: { ...shared, ...workerEnv, DATABASE_URL: proxy?.url ?? database.url } });
    running.push(process);
    const started = JSON.parse(await process.waitForOutput(/\{"worker":"[^"]+","pid":\d+[^}]*\}/, 60_000)) as { worker: string; pid: number };
    return { process, pid: started.pid, id: started.worker, proxy };
  };
  // The database is migrated already; processes starting together set up the run queue one after
  // the other (src/db/pg-boss-setup.ts).
  const [listening, ...started] = await Promise.all([server.waitForOutput(/"url":"http:[^"]+"/, 60_000), ...workers.map((w) => worker(w))]);
  const url = (JSON.parse(`{${listening}}`) as { url: string }).url;
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  cleanups.push(() => sql.end());
  const events = (): ToolEvent[] => markerLines(shared.EVENTS_FILE).map((line) => JSON.parse(line) as ToolEvent);
  return { client: createClient({ url }), url, sql, worker, started, events, marker: shared.MARKER_FILE };
}

const rawId = (globalId: string) => Buffer.from(globalId, "base64").toString("utf8").replace(/^Run:/, "");

async function admitMany(client: DossierClient, count: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) ids.push(rawId((await admit(client, { question: `${prefix} ${i}` })).run.id));
  return ids;
}

/** Waits until every run is terminal; returns their statuses by id. */
async function settledRuns(sql: pg.Client, ids: string[], timeoutMs: number): Promise<Map<string, string>> {
  return waitUntil(
    async () => {
      const { rows } = await sql.query<{ id: string; status: string }>("SELECT id, status FROM run WHERE id = ANY($1)", [ids]);
      const done = rows.filter((row) => !["QUEUED", "RUNNING", "WAITING"].includes(row.status));
      return done.length === ids.length ? new Map(done.map((row) => [row.id, row.status])) : undefined;
    },
    timeoutMs,
    200,
  );
}

/** Everything written about a run: its row, log, attempts, spans, events and trace changes. */
async function written(sql: pg.Client, runId: string) {
  const rows = async (text: string) => (await sql.query(text, [runId])).rows;
  return {
    run: await rows("SELECT status, answer, attempt, lease_owner, lease_expires_at, finished_at FROM run WHERE id = $1"),
    log: await rows("SELECT id, role FROM message WHERE run_id = $1 ORDER BY seq"),
    attempts: await rows("SELECT number, instance, outcome, ended_at FROM run_attempt WHERE run_id = $1 ORDER BY number"),
    spans: await rows("SELECT id, kind, status, ended_at FROM span WHERE trace_id = $1 ORDER BY started_at, id"),
    events: await rows("SELECT e.id FROM span_event e JOIN span s ON s.id = e.span_id WHERE s.trace_id = $1 ORDER BY e.id"),
    changes: await rows("SELECT seq FROM trace_change WHERE trace_id = $1 ORDER BY seq"),
  };
}

async function attemptOutcomes(sql: pg.Client, ids: string[]): Promise<string[]> {
  const { rows } = await sql.query<{ outcome: string | null }>("SELECT outcome FROM run_attempt WHERE run_id = ANY($1) ORDER BY run_id, number", [ids]);
  return rows.map((row) => row.outcome ?? "OPEN");
}

describe.runIf(backends.includes("postgres"))("runs on a database that hangs or fails", () => {
  it("an instance whose database link hangs aborts its tool before another instance takes the run over, and writes nothing once the link heals", async () => {
    const leaseMs = 4_000;
    const marginMs = 1_000;
    const { client, sql, worker, events, marker } = await deployment({
      RUN_LEASE_MS: String(leaseMs),
      RUN_LEASE_MARGIN_MS: String(marginMs),
      DB_CONNECT_TIMEOUT_MS: "1000",
      DB_QUERY_TIMEOUT_MS: "1500",
      DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: "1000",
      // A 30-second tool call; the attempt that takes over answers from the log without calling it again.
      SLOW_TOOL_MS: "30000",
    });
    const workers = await Promise.all([worker({}, { proxied: true }), worker({}, { proxied: true })]);
    const runId = rawId((await admit(client, { question: "survive a hung link" })).run.id);
    const first = await waitUntil(() => events().find((e) => e.event === "start"), 30_000);
    await allowTimeFor("the tool call to be well under way", 500);
    const a = workers.find((w) => w.pid === first.pid)!;
    const b = workers.find((w) => w !== a)!;
    const { rows: before } = await sql.query<{ number: number }>("SELECT number FROM run_attempt WHERE run_id = $1 AND instance = $2", [runId, a.id]);
    a.proxy!.hang();
    const hungAt = Date.now();

    expect(await settledRuns(sql, [runId], 45_000)).toEqual(new Map([[runId, "SUCCEEDED"]]));
    const { rows: attempts } = await sql.query<{ number: number; instance: string; outcome: string; started_at: Date }>(
      "SELECT number, instance, outcome, started_at FROM run_attempt WHERE run_id = $1 ORDER BY number",
      [runId],
    );
    const hungAttempt = attempts.find((attempt) => attempt.number === Math.max(...before.map((row) => row.number)))!;
    const takeover = attempts.find((attempt) => attempt.number === hungAttempt.number + 1)!;
    expect(takeover.instance).toBe(b.id);
    expect(attempts.map((attempt) => attempt.outcome)).toEqual([...attempts.slice(1).map(() => "LEASE_LOST"), "COMPLETED"]);
    // Timestamps from both processes: A's tool had its abort before B's attempt began.
    const abort = events().find((e) => e.event === "abort" && e.pid === a.pid && e.at >= hungAt);
    expect(abort).toBeDefined();
    const takeoverAt = takeover.started_at.getTime();
    console.info(`hung link: A's tool aborted ${abort!.at - hungAt} ms after the hang, ${takeoverAt - abort!.at} ms before B's attempt started`);
    expect(abort!.at).toBeLessThan(takeoverAt);
    expect(abort!.at - hungAt).toBeLessThan(leaseMs);

    // Nothing of A reaches the database once its link heals.
    const settled = await written(sql, runId);
    a.proxy!.heal();
    await allowTimeFor("A's held statements to reach PostgreSQL (they must change nothing)", 3_000);
    expect(await written(sql, runId)).toEqual(settled);
    // The side-effect file shows exactly the calls the trace shows, and no span is left RUNNING.
    const calls = settled.spans.filter((span) => span.kind === "TOOL_CALL");
    expect(markerLines(marker).filter((line) => line.startsWith(`start ${runId} `))).toHaveLength(calls.length);
    expect(settled.spans.filter((span) => span.status === "RUNNING" || span.ended_at === null)).toEqual([]);
  }, 150_000);

  it("a 10-second database outage under 10 in-flight runs: every run ends SUCCEEDED, its attempts handed back, none FAILED", async () => {
    // The lease outlasts the outage: attempts the database failed hand their runs back once it answers again.
    // 10 seconds is what the claim needs: twice every tool call in flight (2 s) and the database's
    // timeouts (1 s to connect, 2 s a query) together, so every run's next write meets the outage,
    // and its hand-back is tried again until the database answers.
    const { client, sql, worker, events } = await deployment({
      RUN_LEASE_MS: "45000",
      RUN_LEASE_MARGIN_MS: "5000",
      DB_CONNECT_TIMEOUT_MS: "1000",
      DB_QUERY_TIMEOUT_MS: "2000",
      WORKER_CONCURRENCY: "5",
      // All ten runs are one principal's: its share is both workers' slots.
      MAX_RUNNING_RUNS_PER_PRINCIPAL: "10",
      SLOW_TOOL_MS: "2000",
    });
    const workers = await Promise.all([worker({}, { proxied: true }), worker({}, { proxied: true })]);
    const ids = await admitMany(client, 10, "outage");
    await waitUntil(
      () =>
        new Set(
          events()
            .filter((e) => e.event === "start")
            .map((e) => e.runId),
        ).size === 10
          ? true
          : undefined,
      60_000,
    );
    for (const w of workers) w.proxy!.refuse();
    await allowTimeFor("a 10-second outage", 10_000);
    for (const w of workers) w.proxy!.heal();

    const statuses = await settledRuns(sql, ids, 60_000);
    expect([...statuses.values()]).toEqual(ids.map(() => "SUCCEEDED"));
    const outcomes = await attemptOutcomes(sql, ids);
    console.info(`outage: attempt outcomes ${JSON.stringify(outcomes)}`);
    expect(outcomes.filter((outcome) => outcome === "HANDED_BACK").length).toBeGreaterThanOrEqual(10);
    expect(outcomes.filter((outcome) => !["HANDED_BACK", "COMPLETED"].includes(outcome))).toEqual([]);
  }, 180_000);

  it("an instance's PostgreSQL sessions killed under 10 in-flight runs (the database stays up): all 10 succeed", async () => {
    const {
      client,
      sql,
      events,
      started: workers,
    } = await deployment({ RUN_LEASE_MS: "3000", WORKER_CONCURRENCY: "5", SLOW_TOOL_MS: "1500" }, { workers: [{}, {}] });
    const ids = await admitMany(client, 10, "killed sessions");
    await waitUntil(() => (events().filter((e) => e.event === "start").length >= 10 ? true : undefined), 60_000);
    const victim = workers[0]!;
    // Killed twice: both the sessions idle in the pool and those in use, then again once the
    // instance has opened new ones (it opens them when its runs next need one).
    for (let i = 0; i < 2; i += 1) {
      const killed = await waitUntil(async () => {
        const { rows } = await sql.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [`dossier ${victim.id}`]);
        return rows.length > 0 ? rows.length : undefined;
      }, 10_000);
      expect(killed).toBeGreaterThan(0);
      await allowTimeFor("the instance to reconnect", 700);
    }
    const statuses = await settledRuns(sql, ids, 60_000);
    expect([...statuses.values()]).toEqual(ids.map(() => "SUCCEEDED"));
    console.info(`killed sessions: attempt outcomes ${JSON.stringify(await attemptOutcomes(sql, ids))}`);
  }, 150_000);

  it("a worker killed holding 4 runs while 200 are queued: its 4 runs resume within two leases, ahead of the queue", async () => {
    const leaseMs = 4_000;
    // Every run is one principal's: its share is both workers' slots.
    const { client, sql, worker, events, started } = await deployment(
      { RUN_LEASE_MS: String(leaseMs), WORKER_CONCURRENCY: "4", MAX_RUNNING_RUNS_PER_PRINCIPAL: "8" },
      { workers: [{ SLOW_TOOL_MS: "60000" }] },
    );
    const victim = started[0]!;
    const held = await admitMany(client, 4, "held");
    await waitUntil(() => (events().filter((e) => e.event === "start" && e.pid === victim.pid).length === 4 ? true : undefined), 60_000);
    // Ten admissions at a time: the order of the 200 says nothing here. The survivor starts meanwhile.
    const [survivor] = await Promise.all([worker({ SLOW_TOOL_MS: "300" }), ...Array.from({ length: 10 }, (_, k) => admitMany(client, 20, `queued ${k}`))]);
    await waitUntil(() => (events().some((e) => e.pid === survivor.pid) ? true : undefined), 60_000);
    victim.process.child.kill("SIGKILL");
    await victim.process.exited;
    const killedAt = Date.now();

    // Resumed: the survivor's claim starts the next attempt (stamped with its own clock); the
    // model answers from the log, without calling the tool again.
    const resumed = await waitUntil(async () => {
      const { rows } = await sql.query<{ at: Date }>("SELECT started_at AS at FROM run_attempt WHERE run_id = ANY($1) AND instance = $2", [held, survivor.id]);
      return rows.length === 4 ? rows.map((row) => ({ at: row.at.getTime() })) : undefined;
    }, 60_000);
    const latest = Math.max(...resumed.map((e) => e.at)) - killedAt;
    const { rows } = await sql.query<{ status: string; count: string }>("SELECT status, count(*) FROM run GROUP BY status");
    console.info(`orphans first: the 4 held runs resumed within ${latest} ms; runs by status ${JSON.stringify(rows)}`);
    expect(latest).toBeLessThan(2 * leaseMs);
    // Ahead of the queue: most of the 200 were still waiting.
    expect(Number(rows.find((row) => row.status === "QUEUED")?.count ?? 0)).toBeGreaterThan(100);
  }, 240_000);

  it("/ready answers within a second, and says not ready while the database does not answer", async () => {
    const database = await createPostgresDatabase();
    cleanups.push(() => database.drop());
    const proxy = await startFaultProxy(database.url);
    cleanups.push(() => proxy.close());
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-ready-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const server = spawnBuilt("src/main.ts", {
      env: { DATABASE_URL: proxy.url, PORT: "0", AUTH_REQUIRED: "false", IN_PROCESS_WORKER: "false", DATA_DIR: dir, DB_CONNECT_TIMEOUT_MS: "2000" },
    });
    running.push(server);
    const url = (JSON.parse(`{${await server.waitForOutput(/"url":"http:[^"]+"/, 60_000)}}`) as { url: string }).url;
    const ready = async () => {
      const started = Date.now();
      const response = await fetch(new URL("/ready", url), { signal: AbortSignal.timeout(5_000) });
      return { status: response.status, ms: Date.now() - started };
    };
    expect((await ready()).status).toBe(200);
    proxy.hang();
    for (let i = 0; i < 3; i += 1) {
      const hung = await ready();
      expect(hung.status).toBe(503);
      expect(hung.ms).toBeLessThan(1_000);
    }
    proxy.heal();
    const healed = await waitUntil(async () => ((await ready()).status === 200 ? true : undefined), 10_000, 200);
    expect(healed).toBe(true);
  }, 90_000);

  it("Redis hung, then reset, under live trace subscribers: every subscriber resumes without a gap or a duplicate", async () => {
    const redis = await startFaultProxy(redisUrl!);
    cleanups.push(() => redis.close());
    const { client, url, sql, events } = await deployment({ REDIS_URL: redisUrl!, SLOW_TOOL_MS: "2500" }, { serverRedis: redis, workers: [{}] });
    /** A run whose last updates (its tool's end, the answer, the trace's end) are published while the API server's Redis link fails. */
    const runThrough = async (fault: () => void) => {
      const { run } = await admit(client, { question: "stream through a failing Redis" });
      const runId = rawId(run.id);
      // Three subscribers of the API server, each over its own WebSocket; raw streams, no client-side deduplication.
      const received = [0, 1, 2].map(async () => {
        const seqs: { seq: number; kind: string }[] = [];
        for await (const { traceUpdates } of createClient({ url }).subscribe(TraceUpdatesDocument, { runId: run.id })) {
          seqs.push({ seq: Number(traceUpdates.seq), kind: traceUpdates.kind });
          if (traceUpdates.kind === "TRACE_ENDED") break;
        }
        return seqs;
      });
      await waitUntil(() => events().find((e) => e.event === "start" && e.runId === runId), 30_000);
      await allowTimeFor("the tool call to near its end", 1_000);
      fault();
      // The worker (its own Redis link works) publishes each update right after writing it.
      await waitUntil(async () => {
        const { rows } = await sql.query("SELECT 1 FROM trace_change WHERE trace_id = $1 AND type = 'TRACE_ENDED'", [runId]);
        return rows.length > 0 ? true : undefined;
      }, 30_000);
      await allowTimeFor("the run's last updates to be published while the link fails", 500);
      redis.heal();
      const streams = await Promise.all(received);
      const { rows } = await sql.query<{ seq: number; type: string }>("SELECT seq, type FROM trace_change WHERE trace_id = $1 ORDER BY seq", [runId]);
      expect(rows.at(-1)?.type).toBe("TRACE_ENDED");
      for (const stream of streams) expect(stream.map((update) => update.seq)).toEqual(rows.map((row) => Number(row.seq)));
    };
    // Hung: the updates wait in the link and flow when it heals.
    await runThrough(() => redis.hang());
    // Reset, and refused until healed: the updates published meanwhile are lost to Redis; the
    // subscribers' streams read them from the database.
    await runThrough(() => redis.refuse());
  }, 150_000);
});
