// The run queue (pg-boss) on a link of its own that hangs, while the main database answers: the
// queue only wakes workers, so the worker keeps claiming from the run table. Its announcements
// (the sweep's, a settled run's next) are not waited for past a bound, and no claim pass waits
// for them at all. The queue reaches PostgreSQL through a fault proxy (test/support/fault-proxy.ts),
// the app's own pool directly.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/open-database.js";
import { silentLogger } from "../../src/logger.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { PgBossRunQueue } from "../../src/runtime/adapters/pg-boss-queue.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { startFaultProxy } from "../support/fault-proxy.js";
import { admit } from "../support/fixtures.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp } from "../support/test-app.js";
import { withTimeout } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe.runIf(backends.includes("postgres"))("a run queue whose link hangs", () => {
  it("holds no run back: the worker claims the runs admitted meanwhile from the database, one after the other", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const proxy = await startFaultProxy(database.url);
    cleanups.push(() => proxy.close());
    const queue = await PgBossRunQueue.start({ url: proxy.url, logger: silentLogger });
    cleanups.push(() => queue.close());
    const model = new ScriptedModel({ name: "hung-queue", steps: () => ({ content: "Done." }) });
    const app = await startTestApp("postgres", {
      database: async () => {
        const db = await openDatabase({ kind: "postgres", url: database.url });
        return { db, dispose: () => db.close() };
      },
      runQueue: queue,
      runtime: { model, concurrency: 1, sweepMs: 500, schedulerPollMs: 3_600_000, sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-hung-queue-")) },
    });
    cleanups.push(() => app.close());
    const { run: baseline } = await admit(app.client, { question: "Before the queue hangs." });
    expect((await settled(app.client, baseline.id, 30_000)).status).toBe("SUCCEEDED");

    proxy.hang();
    const runs = [];
    for (let i = 0; i < 4; i += 1) runs.push((await admit(app.client, { question: `While the queue hangs ${i}.` })).run);
    // One slot: each run starts when the one before ended (its announcement of the next is not
    // waited for long) or at a sweep; none waits for the queue's statements (65 s each by default).
    const statuses = await Promise.all(runs.map(async (run) => (await settled(app.client, run.id, 40_000)).status));
    expect(statuses).toEqual(["SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
  }, 120_000);

  it("closes within seconds: its connections' goodbyes are not waited for", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    const proxy = await startFaultProxy(database.url);
    cleanups.push(() => proxy.close());
    const queue = await PgBossRunQueue.start({ url: proxy.url, logger: silentLogger });
    await queue.enqueue(["run-before-the-hang"]);
    proxy.hang();
    // An announcement on its way when the link hung, as a sweep's would be.
    const announced = queue.enqueue(["run-while-hung"]).catch(() => undefined);
    const started = Date.now();
    await withTimeout(Promise.all([queue.close(), announced]), 15_000);
    expect(Date.now() - started).toBeLessThan(8_000);
  }, 60_000);
});
