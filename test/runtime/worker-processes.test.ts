// S2, R17: a server that only serves the API (IN_PROCESS_WORKER=false) and worker processes on
// one PostgreSQL, joined by the pg-boss run queue. Every admitted run is executed exactly once,
// by whichever worker claims it, and a worker killed mid-run leaves its run to the other one
// within the lease time. PostgreSQL only: several processes cannot share the embedded database.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { killAll, markerLines, type Spawned, spawnBuilt, spawnTs } from "../support/processes.js";
import { waitUntil } from "../support/wait.js";

const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function deployment(env: Record<string, string>) {
  const database = await createMigratedPostgresDatabase();
  cleanups.push(() => database.drop());
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-workers-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const shared = { DATABASE_URL: database.url, MARKER_FILE: path.join(dir, "marker"), EVENTS_FILE: path.join(dir, "events"), LOG_LEVEL: "info", ...env };
  // The server and both workers start at once: the database is migrated already, and processes
  // starting together create the run queue one after the other (src/db/pg-boss-setup.ts).
  const server = spawnBuilt("src/main.ts", {
    env: { ...shared, PORT: "0", AUTH_REQUIRED: "false", IN_PROCESS_WORKER: "false", DATA_DIR: path.join(dir, "server") },
  });
  running.push(server);
  const workers = [0, 1].map(() => {
    const worker = spawnTs("test/support/queue-worker.ts", { env: shared });
    running.push(worker);
    return worker;
  });
  const [listening] = await Promise.all([
    server.waitForOutput(/"url":"http:[^"]+"/, 60_000),
    ...workers.map((w) => w.waitForOutput(/\{"worker":"[^"]+","pid":\d+/, 60_000)),
  ]);
  const url = (JSON.parse(`{${listening}}`) as { url: string }).url;
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  cleanups.push(() => sql.end());
  return { url, workers, sql, marker: shared.MARKER_FILE, events: shared.EVENTS_FILE };
}

/** Once a run is terminal none of its spans is open, it has one root, and its attempts say how each ended. */
async function expectCleanTrace(sql: pg.Client, runId: string, outcomes: string[]) {
  const { rows: open } = await sql.query("SELECT id FROM span WHERE trace_id = $1 AND (status = 'RUNNING' OR ended_at IS NULL)", [runId]);
  expect(open).toEqual([]);
  const { rows: roots } = await sql.query("SELECT id FROM span WHERE trace_id = $1 AND kind = 'RUN'", [runId]);
  expect(roots).toHaveLength(1);
  const { rows: attempts } = await sql.query<{ outcome: string }>("SELECT outcome FROM run_attempt WHERE run_id = $1 ORDER BY number", [runId]);
  expect(attempts.map((a) => a.outcome)).toEqual(outcomes);
}

describe.runIf(backends.includes("postgres"))("worker processes on the PostgreSQL job queue", () => {
  it("the worker as `npm run worker` ships it (the bundle in dist/) executes a queued run", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-worker-bundle-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const server = spawnBuilt("src/main.ts", {
      env: { DATABASE_URL: database.url, PORT: "0", AUTH_REQUIRED: "false", IN_PROCESS_WORKER: "false", DATA_DIR: dir },
    });
    running.push(server);
    // Both at once, as an orchestrator starts them.
    const worker = spawnBuilt("src/worker-main.ts", { env: { DATABASE_URL: database.url } });
    running.push(worker);
    const [listening] = await Promise.all([server.waitForOutput(/"url":"http:[^"]+"/, 60_000), worker.waitForOutput(/"message":"worker started"/, 60_000)]);
    const url = (JSON.parse(`{${listening}}`) as { url: string }).url;
    const { run } = await admit(createClient({ url }), { question: "Is the bundled worker alive?" });
    const sql = new pg.Client({ connectionString: database.url });
    await sql.connect();
    cleanups.push(() => sql.end());
    const runId = Buffer.from(run.id, "base64").toString("utf8").replace(/^Run:/, "");
    const settled = await waitUntil(async () => {
      const { rows } = await sql.query<{ status: string; answer: string | null }>("SELECT status, answer FROM run WHERE id = $1", [runId]);
      return rows[0] && !["QUEUED", "RUNNING"].includes(rows[0].status) ? rows[0] : undefined;
    }, 60_000);
    expect(settled.status).toBe("SUCCEEDED");
    expect(settled.answer).toContain("Is the bundled worker alive?");
  }, 120_000);

  it("two worker processes execute 50 queued runs, each exactly once", async () => {
    const { url, workers, sql, marker } = await deployment({ SLOW_TOOL_MS: "50", WORKER_CONCURRENCY: "4" });
    const client = createClient({ url });
    for (let i = 0; i < 50; i += 1) await admit(client, { question: `question ${i}` });

    const settled = await waitUntil(async () => {
      const { rows } = await sql.query<{ id: string; status: string; answer: string | null }>(
        "SELECT id, status, answer FROM run WHERE status NOT IN ('QUEUED', 'RUNNING')",
      );
      return rows.length === 50 ? rows : undefined;
    }, 90_000);
    expect(settled.filter((run) => run.status !== "SUCCEEDED")).toEqual([]);
    const runIds = settled.map((run) => run.id);

    // Exactly one execution of the tool per run, and one per run in the model's eyes too.
    const starts = markerLines(marker).filter((line) => line.startsWith("start "));
    const perRun = new Map<string, number>();
    for (const line of starts) perRun.set(line.split(" ")[1]!, (perRun.get(line.split(" ")[1]!) ?? 0) + 1);
    expect([...perRun.keys()].sort()).toEqual([...runIds].sort());
    expect([...perRun.values()].every((count) => count === 1)).toBe(true);
    const { rows: modelCalls } = await sql.query<{ run_id: string; calls: string }>(
      `SELECT t.run_id, count(*) AS calls FROM span s JOIN trace t ON t.id = s.trace_id WHERE s.kind = 'MODEL_CALL' GROUP BY t.run_id`,
    );
    expect(modelCalls.map((row) => Number(row.calls))).toEqual(runIds.map(() => 2));

    // Both workers took part, and each run's answer names the worker that ran its tool.
    const pids = workers.map((w) => String(w.child.pid));
    const byPid = new Map(pids.map((pid) => [pid, starts.filter((line) => line.endsWith(` ${pid}`)).length]));
    expect([...byPid.values()].every((count) => count > 0)).toBe(true);
    for (const run of settled) {
      const ranBy = starts.find((line) => line.startsWith(`start ${run.id} `))!.split(" ")[2];
      expect(run.answer).toMatch(new RegExp(`^Finished "question \\d+" by ${ranBy}\\.$`));
    }
  }, 150_000);

  it("a worker killed with SIGKILL mid-run leaves the run to the other worker within the lease time", async () => {
    const leaseMs = 5_000;
    const { url, workers, sql, marker } = await deployment({ SLOW_TOOL_MS: "60000", RUN_LEASE_MS: String(leaseMs) });
    const { run } = await admit(createClient({ url }), { question: "survive a crash" });
    const first = await waitUntil(async () => markerLines(marker)[0], 30_000);
    const victim = workers.find((w) => first.endsWith(` ${w.child.pid}`))!;
    const survivor = workers.find((w) => w !== victim)!;
    victim.child.kill("SIGKILL");
    await victim.exited;
    const killedAt = Date.now();

    const runId = Buffer.from(run.id, "base64").toString("utf8").replace(/^Run:/, "");
    const settled = await waitUntil(async () => {
      const { rows } = await sql.query<{ status: string; answer: string | null }>("SELECT status, answer FROM run WHERE id = $1", [runId]);
      return rows[0] && !["QUEUED", "RUNNING"].includes(rows[0].status) ? rows[0] : undefined;
    }, 30_000);
    const tookOverAfterMs = Date.now() - killedAt;
    expect(settled).toEqual({ status: "SUCCEEDED", answer: `Finished "survive a crash" by ${survivor.child.pid}.` });
    // The lease expires at most leaseMs after the last heartbeat, and may be taken over once its
    // margin (a fifth of it) passed too; the sweep (every leaseMs / 3) and a poll (500 ms) later
    // the survivor has it, and finishing takes a few queries.
    expect(tookOverAfterMs).toBeLessThan(leaseMs + leaseMs / 5 + leaseMs / 3 + 2_500);
    // The tool ran once, in the killed worker: the survivor resumed from the log, with a repair.
    expect(markerLines(marker)).toEqual([`start ${runId} ${victim.child.pid}`]);
    const { rows: roles } = await sql.query<{ role: string }>("SELECT role FROM message WHERE run_id = $1 ORDER BY seq", [runId]);
    expect(roles.map((row) => row.role)).toEqual(["USER", "ASSISTANT", "REPAIR", "ASSISTANT"]);
    await expectCleanTrace(sql, runId, ["CRASHED", "COMPLETED"]);
  }, 120_000);

  it("a worker stopped with SIGTERM hands its run back at once, long before its lease would expire", async () => {
    const leaseMs = 60_000;
    const { url, workers, sql, marker } = await deployment({ SLOW_TOOL_MS: "60000", RUN_LEASE_MS: String(leaseMs) });
    const { run } = await admit(createClient({ url }), { question: "stop gracefully" });
    const runId = Buffer.from(run.id, "base64").toString("utf8").replace(/^Run:/, "");
    const first = await waitUntil(async () => markerLines(marker)[0], 30_000);
    const stopped = workers.find((w) => first.endsWith(` ${w.child.pid}`))!;
    const survivor = workers.find((w) => w !== stopped)!;
    const stoppedAt = Date.now();
    stopped.child.kill("SIGTERM");
    expect(await stopped.exited).toEqual({ code: 0, signal: null });

    const settled = await waitUntil(async () => {
      const { rows } = await sql.query<{ status: string; answer: string | null }>("SELECT status, answer FROM run WHERE id = $1", [runId]);
      return rows[0] && !["QUEUED", "RUNNING"].includes(rows[0].status) ? rows[0] : undefined;
    }, 30_000);
    expect(settled).toEqual({ status: "SUCCEEDED", answer: `Finished "stop gracefully" by ${survivor.child.pid}.` });
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    expect(stopped.output()).toMatch(/"message":"run handed back"/);
    await expectCleanTrace(sql, runId, ["HANDED_BACK", "COMPLETED"]);
  }, 120_000);

  it("a worker stopped with SIGTERM hands its run back only once its tool has stopped", async () => {
    // The tool takes 3 s to wind down once aborted; the worker waits for it before it hands the run back.
    const { url, workers, sql, events } = await deployment({ SLOW_TOOL_MS: "60000", ABORT_STOP_MS: "3000", RUN_LEASE_MS: "60000" });
    const { run } = await admit(createClient({ url }), { question: "wind down first" });
    const runId = Buffer.from(run.id, "base64").toString("utf8").replace(/^Run:/, "");
    // The tool's EVENTS_FILE lines for the run, in the order the two processes wrote them.
    const seen = () =>
      markerLines(events)
        .map((line) => JSON.parse(line) as { event: string; runId: string; pid: number; at: number })
        .filter((e) => e.runId === runId);
    const first = await waitUntil(async () => seen()[0], 30_000);
    const stopped = workers.find((w) => w.child.pid === first.pid)!;
    const survivor = workers.find((w) => w !== stopped)!;
    stopped.child.kill("SIGTERM");
    expect(await stopped.exited).toEqual({ code: 0, signal: null });

    const settled = await waitUntil(async () => {
      const { rows } = await sql.query<{ status: string; answer: string | null }>("SELECT status, answer FROM run WHERE id = $1", [runId]);
      return rows[0] && !["QUEUED", "RUNNING"].includes(rows[0].status) ? rows[0] : undefined;
    }, 30_000);
    expect(settled).toEqual({ status: "SUCCEEDED", answer: `Finished "wind down first" by ${survivor.child.pid}.` });
    // The tool ran once and had stopped before its attempt was handed back (the other worker resumed from the log).
    expect(seen().map((e) => `${e.event} in ${e.pid === stopped.child.pid ? "stopped worker" : "survivor"}`)).toEqual([
      "start in stopped worker",
      "abort in stopped worker",
      "stopped in stopped worker",
    ]);
    const { rows: attempts } = await sql.query<{ ended_at: Date; started_at: Date }>(
      "SELECT ended_at, started_at FROM run_attempt WHERE run_id = $1 ORDER BY number",
      [runId],
    );
    const toolStoppedAt = seen().find((e) => e.event === "stopped")!.at;
    expect(attempts.map((a) => [a.ended_at.getTime() >= toolStoppedAt, a.started_at.getTime() >= toolStoppedAt])).toEqual([
      [true, false],
      [true, true],
    ]);
    await expectCleanTrace(sql, runId, ["HANDED_BACK", "COMPLETED"]);
  }, 120_000);
});
