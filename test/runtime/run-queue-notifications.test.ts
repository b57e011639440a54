// How a worker in another process hears of a ready run on PostgreSQL (S2): the announcing process
// inserts the run's pg-boss job and sends a NOTIFY; a worker that LISTENs claims at once. The
// notification is only a wake-up: with the worker's channel down, the run is still executed, found
// by the worker's sweep (the run table and its queued job are the durable record).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/open-database.js";
import { silentLogger } from "../../src/logger.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { PgBossRunQueue } from "../../src/runtime/adapters/pg-boss-queue.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { admit } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** An API-only app and a worker app on one PostgreSQL database, each with a run queue of its own (two processes' worth). */
async function deployment({ workerListens, sweepMs }: { workerListens: boolean; sweepMs: number }): Promise<{ api: TestApp; worker: TestApp }> {
  const database = await createMigratedPostgresDatabase();
  cleanups.push(() => database.drop());
  const open = async () => {
    const db = await openDatabase({ kind: "postgres", url: database.url });
    return { db, dispose: () => db.close() };
  };
  const workerQueue = await PgBossRunQueue.start({ url: database.url, logger: silentLogger, listen: workerListens });
  cleanups.push(() => workerQueue.close());
  const model = new ScriptedModel({ name: "notified", steps: () => ({ content: "Done." }) });
  const worker = await startTestApp("postgres", {
    database: open,
    runQueue: workerQueue,
    runtime: { model, sweepMs, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-notified-")) },
  });
  cleanups.push(() => worker.close());
  const apiQueue = await PgBossRunQueue.start({ url: database.url, logger: silentLogger });
  cleanups.push(() => apiQueue.close());
  const api = await startTestApp("postgres", { database: open, runQueue: apiQueue });
  cleanups.push(() => api.close());
  return { api, worker };
}

describe.runIf(backends.includes("postgres"))("a run announced in another process", () => {
  it("is claimed on the notification, long before the worker's next sweep", async () => {
    const { api } = await deployment({ workerListens: true, sweepMs: 120_000 });
    const started = Date.now();
    const { run } = await admit(api.client, { question: "Wake up." });
    expect((await settled(api.client, run.id, 30_000)).status).toBe("SUCCEEDED");
    // The worker swept once at its start; without the notification this run would wait two minutes.
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 90_000);

  it("is still executed when the worker's notification channel is down: its sweep finds it", async () => {
    const { api, worker } = await deployment({ workerListens: false, sweepMs: 500 });
    const { run } = await admit(api.client, { question: "Nobody told me." });
    expect((await settled(api.client, run.id, 30_000)).status).toBe("SUCCEEDED");
    // Executed once, by the worker app (the API app has no worker): the one attempt names the worker's instance.
    const attempts = await worker.app.db.prisma.$queryRawUnsafe<{ instance: string }[]>("SELECT instance FROM run_attempt");
    expect(attempts.map((a) => a.instance)).toEqual([worker.app.db.instanceId]);
  }, 90_000);
});

describe.runIf(backends.includes("postgres"))("runs announced together", () => {
  it("go out in one announcement while another is on its way: 40 runs, two NOTIFYs and two inserts, every run queued once", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const queue = await PgBossRunQueue.start({ url: database.url, logger: silentLogger });
    cleanups.push(() => queue.close());
    const listener = new pg.Client({ connectionString: database.url });
    await listener.connect();
    cleanups.push(() => listener.end());
    let notifications = 0;
    listener.on("notification", () => (notifications += 1));
    await listener.query("LISTEN dossier_run_ready");
    // The queue's inserts, counted as they are sent (pg-boss sends each as one statement).
    const boss = (queue as unknown as { boss: { insert: (...args: unknown[]) => Promise<unknown> } }).boss;
    const insert = boss.insert.bind(boss);
    let inserts = 0;
    boss.insert = (...args) => {
      inserts += 1;
      return insert(...args);
    };
    const runIds = Array.from({ length: 40 }, () => crypto.randomUUID());
    // One announcement, then, a turn later while it is on its way, 39 more (as admissions committing together make them).
    const first = queue.announce(runIds.slice(0, 1));
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.all([first, ...runIds.slice(1).map((runId) => queue.announce([runId, runId]))]);
    await waitFor(() => notifications >= 2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(notifications).toBe(2);
    expect(inserts).toBe(2);
    const jobs = await listener.query<{ run_id: string }>("SELECT data->>'runId' AS run_id FROM pgboss.job WHERE name = 'dossier-run-ready'");
    expect(jobs.rows.map((job) => job.run_id).sort()).toEqual([...runIds].sort());
  }, 60_000);

  it("wait a second at most for an announcement that hangs", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const queue = await PgBossRunQueue.start({ url: database.url, logger: silentLogger, listen: false });
    cleanups.push(() => queue.close());
    // The first insert never answers, as on a link that stopped answering; the later ones do.
    const boss = (queue as unknown as { boss: { insert: (...args: unknown[]) => Promise<unknown> } }).boss;
    const insert = boss.insert.bind(boss);
    const sent: { runIds: string[]; at: number }[] = [];
    boss.insert = (jobs) => {
      sent.push({ runIds: (jobs as { data: { runId: string } }[]).map((job) => job.data.runId), at: performance.now() });
      return sent.length === 1 ? new Promise(() => undefined) : insert(jobs);
    };
    void queue.announce(["hanging"]);
    await new Promise((resolve) => setImmediate(resolve));
    const later = performance.now();
    await queue.announce(["next"]);
    expect(sent.map((batch) => batch.runIds)).toEqual([["hanging"], ["next"]]);
    expect(sent[1]!.at - later).toBeGreaterThan(900);
    expect(sent[1]!.at - later).toBeLessThan(3_000);
  }, 60_000);

  it("are sent before the queue closes, and one that fails does not hold the next back", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const queue = await PgBossRunQueue.start({ url: database.url, logger: silentLogger, listen: false });
    const boss = (queue as unknown as { boss: { insert: (...args: unknown[]) => Promise<unknown> } }).boss;
    const insert = boss.insert.bind(boss);
    let calls = 0;
    // The first insert fails a moment after it was sent; the next ones go through.
    boss.insert = (jobs) => (++calls === 1 ? new Promise((_, reject) => setTimeout(() => reject(new Error("refused")), 50)) : insert(jobs));
    const runIds = Array.from({ length: 3 }, () => crypto.randomUUID());
    void queue.announce(["refused"]);
    await new Promise((resolve) => setImmediate(resolve));
    // Announced and not awaited, as admissions announce, right before the queue closes.
    for (const runId of runIds) void queue.announce([runId]);
    await queue.close();
    const reader = new pg.Client({ connectionString: database.url });
    await reader.connect();
    try {
      const jobs = await reader.query<{ run_id: string }>("SELECT data->>'runId' AS run_id FROM pgboss.job WHERE name = 'dossier-run-ready'");
      expect(jobs.rows.map((job) => job.run_id).sort()).toEqual([...runIds].sort());
    } finally {
      await reader.end();
    }
  }, 60_000);

  it("taken together are acknowledged in one statement: 20 deliveries, one acknowledgement, every job completed", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const queue = await PgBossRunQueue.start({ url: database.url, logger: silentLogger, listen: false });
    cleanups.push(() => queue.close());
    // The queue's acknowledgements, counted as they are sent (pg-boss sends each as one statement).
    const boss = (queue as unknown as { boss: { complete: (...args: unknown[]) => Promise<unknown> } }).boss;
    const complete = boss.complete.bind(boss);
    let acknowledgements = 0;
    boss.complete = (...args) => {
      acknowledgements += 1;
      return complete(...args);
    };
    const runIds = Array.from({ length: 20 }, () => crypto.randomUUID());
    await queue.enqueue(runIds);
    const deliveries = await queue.take(runIds.length);
    expect(deliveries.map((delivery) => delivery.runId).sort()).toEqual([...runIds].sort());
    // As the worker acknowledges what a claim took: one after the other, none awaited before the next.
    await Promise.all(deliveries.map((delivery) => delivery.done()));
    expect(acknowledgements).toBe(1);
    const reader = new pg.Client({ connectionString: database.url });
    await reader.connect();
    try {
      const jobs = await reader.query<{ state: string }>("SELECT state::text FROM pgboss.job WHERE name = 'dossier-run-ready'");
      expect(jobs.rows.map((job) => job.state)).toEqual(runIds.map(() => "completed"));
    } finally {
      await reader.end();
    }
    // Nothing is delivered again.
    expect(await queue.take(runIds.length)).toEqual([]);
  }, 60_000);
});

async function waitFor(condition: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
