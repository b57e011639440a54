// Issue 41, exactly once with real processes: Dossier instances (the real app, worker and
// scheduler, a scripted model) on one PostgreSQL database fire a schedule every second or two. Every
// fire time the recurrence enumerates between the first fire and the last is recorded exactly once
// — with two schedulers side by side, with one of them SIGKILLed mid-window, and after both were
// stopped for 10 seconds (catchUp LATEST admits only the latest missed fire, ALL every one).
// Assertions are on sets of fire times, never on how late a fire was (the machine may be loaded).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "../../sdk/client.js";
import { CreateScheduleDocument, type CreateScheduleInput } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/domain/global-id.js";
import { MISSED_AFTER_MS, nextFireAfter, type Recurrence } from "../../src/domain/schedules/fire-times.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { killAll, type Spawned, spawnTs } from "../support/processes.js";
import { allowTimeFor, waitUntil } from "../support/wait.js";

const running: Spawned[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  await killAll(running);
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Fire = { fireTime: Date; status: string; reason: string | null; runId: string | null; runCreatedAt: Date | null };

async function setUp(): Promise<{ env: Record<string, string>; sql: pg.Client }> {
  const database = await createMigratedPostgresDatabase();
  cleanups.push(() => database.drop());
  const dir = mkdtempSync(path.join(tmpdir(), "dossier-schedules-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
  cleanups.push(() => sql.end());
  return { env: { DATABASE_URL: database.url, MARKER_FILE: path.join(dir, "marker"), SLOW_TOOL_MS: "50" }, sql };
}

async function startInstance(env: Record<string, string>): Promise<{ url: string; process: Spawned }> {
  const p = spawnTs("test/support/worker-process.ts", { env });
  running.push(p);
  const line = await p.waitForOutput(/\{"url":"[^"]+","pid":\d+\}/, 90_000);
  return { url: (JSON.parse(line) as { url: string }).url, process: p };
}

async function kill(p: Spawned): Promise<void> {
  running.splice(running.indexOf(p), 1);
  p.child.kill("SIGKILL");
  await p.exited;
}

async function createSchedule(url: string, input: Omit<CreateScheduleInput, "workspaceId">): Promise<string> {
  const client = createClient({ url });
  const workspace = await createWorkspace(client);
  const payload = (await client.request(CreateScheduleDocument, { input: { ...input, workspaceId: workspace.id } })).createSchedule;
  return idOfType(expectType(payload, "CreateScheduleSuccess").schedule.id, "Schedule")!;
}

async function recurrence(sql: pg.Client, id: string): Promise<Recurrence> {
  const { rows } = await sql.query("SELECT interval_seconds, created_at FROM schedule WHERE id = $1", [id]);
  return { cron: null, intervalSeconds: rows[0].interval_seconds, timezone: "UTC", startAt: null, endAt: null, createdAt: rows[0].created_at };
}

async function firesOf(sql: pg.Client, id: string): Promise<Fire[]> {
  const { rows } = await sql.query(
    `SELECT f.fire_time, f.status, f.reason, f.run_id, r.created_at AS run_created_at
       FROM schedule_fire f LEFT JOIN run r ON r.id = f.run_id
      WHERE f.schedule_id = $1 ORDER BY f.fire_time, f.created_at`,
    [id],
  );
  return rows.map((r) => ({ fireTime: r.fire_time, status: r.status, reason: r.reason, runId: r.run_id, runCreatedAt: r.run_created_at }));
}

/** Waits until the schedule has recorded a fire at or after `at`. */
function firedSince(sql: pg.Client, id: string, at: Date, timeoutMs = 60_000): Promise<true> {
  return waitUntil(
    async () => {
      const { rows } = await sql.query("SELECT 1 FROM schedule_fire WHERE schedule_id = $1 AND fire_time >= $2", [id, at]);
      return rows.length > 0 || undefined;
    },
    timeoutMs,
    200,
  );
}

/**
 * The recorded fires are exactly the recurrence's fire times from the first fire to the last
 * recorded one (no gap, no duplicate), the schedule's next fire follows the last, and every
 * admitted fire has one run of its own, admitted with its own idempotency key.
 */
async function expectExactlyOnce(sql: pg.Client, id: string): Promise<Fire[]> {
  const rec = await recurrence(sql, id);
  const fires = await firesOf(sql, id);
  expect(fires.length).toBeGreaterThan(0);
  const expected: string[] = [];
  for (let at = nextFireAfter(rec, rec.createdAt); at && at <= fires.at(-1)!.fireTime; at = nextFireAfter(rec, at)) expected.push(at.toISOString());
  expect(fires.map((f) => f.fireTime.toISOString())).toEqual(expected);

  const { rows: schedule } = await sql.query("SELECT next_fire_at FROM schedule WHERE id = $1", [id]);
  expect(schedule[0].next_fire_at.toISOString()).toBe(nextFireAfter(rec, fires.at(-1)!.fireTime)!.toISOString());

  const admitted = fires.filter((f) => f.status === "ADMITTED");
  const { rows: runs } = await sql.query("SELECT id, fire_time FROM run WHERE schedule_id = $1 ORDER BY fire_time", [id]);
  expect(runs.map((r) => r.fire_time.toISOString())).toEqual(admitted.map((f) => f.fireTime.toISOString()));
  expect(new Set(runs.map((r) => r.id))).toEqual(new Set(admitted.map((f) => f.runId)));
  const { rows: keys } = await sql.query("SELECT key, run_id FROM idempotency_key WHERE key LIKE $1 ORDER BY key", [`schedule:${id}@%`]);
  expect(keys.map((k) => k.key)).toEqual(admitted.map((f) => `schedule:${id}@${f.fireTime.toISOString()}`));
  expect(new Set(keys.map((k) => k.run_id))).toEqual(new Set(admitted.map((f) => f.runId)));
  return fires;
}

/** How late the fire's run was admitted (its run's creation is the claiming transaction's start). */
const lateness = (f: Fire) => f.runCreatedAt!.getTime() - f.fireTime.getTime();

describe.runIf(backends.includes("postgres"))("schedules fired by real processes on PostgreSQL", () => {
  it("admits every fire of a 1-second schedule exactly once with two schedulers, one of them SIGKILLed mid-window", async () => {
    const { env, sql } = await setUp();
    const [a] = await Promise.all([startInstance(env), startInstance(env)]);
    const id = await createSchedule(a.url, { intervalSeconds: 1, question: "Screen the EU battery makers", overlap: "ENQUEUE", catchUp: "ALL" });
    await firedSince(sql, id, new Date(Date.now() + 6_000));

    // Killed just after a fire was due: its scheduler may be in the middle of that fire's transaction.
    const rec = await recurrence(sql, id);
    const due = nextFireAfter(rec, new Date())!;
    await allowTimeFor("the next fire to become due", Math.max(0, due.getTime() - Date.now()) + 5);
    await kill(a.process);
    const restarted = startInstance(env);
    await firedSince(sql, id, new Date(Date.now() + 7_000));
    await restarted;
    await killAll(running);

    const fires = await expectExactlyOnce(sql, id);
    expect(fires.length).toBeGreaterThanOrEqual(12);
    expect(fires.every((f) => f.status === "ADMITTED")).toBe(true);
  }, 150_000);

  it("after both instances stopped for 10 seconds, catchUp LATEST admits only the latest missed fire and ALL every one", async () => {
    const { env, sql } = await setUp();
    const first = await startInstance(env);
    const question = "Re-screen the EU battery makers";
    const latest = await createSchedule(first.url, { intervalSeconds: 2, question, overlap: "ENQUEUE", catchUp: "LATEST" });
    const all = await createSchedule(first.url, { intervalSeconds: 2, question, overlap: "ENQUEUE", catchUp: "ALL" });
    const twoFires = new Date(Date.now() + 4_000);
    await Promise.all([firedSince(sql, latest, twoFires), firedSince(sql, all, twoFires)]);
    await killAll(running);
    const stoppedAt = new Date();

    await allowTimeFor("fires to be missed while no scheduler runs", 10_000);
    const restartedAt = new Date();
    await Promise.all([startInstance(env), startInstance(env)]);
    const upAt = new Date();
    const afterRestart = new Date(Date.now() + 4_000);
    await Promise.all([firedSince(sql, latest, afterRestart), firedSince(sql, all, afterRestart)]);
    await killAll(running);

    // LATEST: the missed fires but the latest are SKIPPED with the reason; the latest of them is
    // admitted (more than MISSED_AFTER_MS late). A fire due once the schedulers were up is admitted
    // however late a loaded machine makes it: it was not missed.
    const latestFires = await expectExactlyOnce(sql, latest);
    const skipped = latestFires.filter((f) => f.status === "SKIPPED");
    expect(skipped.length).toBeGreaterThan(0);
    for (const f of skipped) {
      expect(f.reason).toBe("missed while no scheduler ran (catchUp LATEST)");
      expect(f.fireTime.getTime()).toBeGreaterThan(stoppedAt.getTime() - 2_000);
      expect(f.fireTime.getTime()).toBeLessThan(upAt.getTime());
    }
    expect(latestFires.filter((f) => f.fireTime >= upAt && f.status !== "ADMITTED")).toEqual([]);
    const lastSkipped = latestFires.indexOf(skipped.at(-1)!);
    expect(latestFires.slice(0, lastSkipped + 1).filter((f) => f.status !== "SKIPPED" && f.fireTime > stoppedAt)).toEqual([]);
    const caughtUp = latestFires[lastSkipped + 1]!;
    expect(caughtUp.status).toBe("ADMITTED");
    expect(lateness(caughtUp)).toBeGreaterThan(MISSED_AFTER_MS - 500);

    // ALL: every missed fire admitted after the restart.
    const allFires = await expectExactlyOnce(sql, all);
    expect(allFires.every((f) => f.status === "ADMITTED")).toBe(true);
    const missed = allFires.filter((f) => f.fireTime > stoppedAt && f.fireTime < restartedAt);
    expect(missed.length).toBeGreaterThanOrEqual(4);
    expect(missed.every((f) => f.runCreatedAt! >= restartedAt)).toBe(true);
  }, 150_000);
});
