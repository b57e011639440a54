// Dossier's processes (the API, workers) started together on a fresh PostgreSQL database, as an
// orchestrator starts them: each sets up pg-boss and its queues (the run queue, webhook attempts)
// at the same moment, and every one of them must come up. pg-boss creating two queues at once
// deadlocks (pg-boss-setup.ts), so without Dossier's setup lock all but one setup died with
// `deadlock detected`. Each round is a fresh database: the race is on the first start only.
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { PG_BOSS_SETUP_LOCK_KEY, underSetupLock } from "../../src/db/pg-boss-setup.js";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { PgBossRunQueue } from "../../src/runtime/adapters/pg-boss-queue.js";
import { PgBossWebhookQueue } from "../../src/webhooks/delivery/pg-boss-webhook-queue.js";
import type { WebhookDelivery } from "../../src/webhooks/delivery/webhook-delivery.js";
import { backends, createMigratedPostgresDatabase } from "../support/databases.js";
import { errorLogger } from "../support/warning-logger.js";

const ROUNDS = 5;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function queryOnce<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function queueNames(url: string): Promise<string[]> {
  return (await queryOnce<{ name: string }>(url, "SELECT name FROM pgboss.queue ORDER BY name")).map((row) => row.name);
}

describe.runIf(backends.includes("postgres"))("processes starting together on a fresh database", () => {
  it(`all start their run queue, three at once (${ROUNDS} fresh databases)`, async () => {
    const failures: string[] = [];
    const queues: string[][] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const database = await createMigratedPostgresDatabase();
      cleanups.push(() => database.drop());
      const { logger } = errorLogger();
      const started = await Promise.allSettled([0, 1, 2].map(() => PgBossRunQueue.start({ url: database.url, logger, listen: false })));
      for (const result of started) {
        if (result.status === "fulfilled") cleanups.push(() => result.value.close());
        else failures.push(`round ${round}: ${String(result.reason)}`);
      }
      queues.push(await queueNames(database.url));
    }
    expect(failures).toEqual([]);
    expect(queues).toEqual(Array.from({ length: ROUNDS }, () => ["dossier-run-ready"]));
  }, 120_000);

  it(`all start their run queue and their webhook queue, two processes at once (${ROUNDS} fresh databases)`, async () => {
    // The relay reads nothing here: the test is about the queues' setup.
    const prisma = { $queryRawUnsafe: async () => [], $executeRawUnsafe: async () => 0 } as unknown as PrismaClient;
    const delivery = { deliver: async () => undefined } as unknown as WebhookDelivery;
    const failures: string[] = [];
    const queues: string[][] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const database = await createMigratedPostgresDatabase();
      cleanups.push(() => database.drop());
      const { logger, errors } = errorLogger();
      const webhookQueues = [0, 1].map(() => new PgBossWebhookQueue({ url: database.url, prisma, delivery, logger, pollMs: 60_000 }));
      for (const queue of webhookQueues) queue.start();
      const started = await Promise.allSettled([0, 1].map(() => PgBossRunQueue.start({ url: database.url, logger, listen: false })));
      for (const result of started) {
        if (result.status === "fulfilled") cleanups.push(() => result.value.close());
        else failures.push(`round ${round}, run queue: ${String(result.reason)}`);
      }
      // close() waits for the queue's start: one that failed said so ("did not start").
      await Promise.all(webhookQueues.map((queue) => queue.close()));
      for (const [message, fields] of errors) failures.push(`round ${round}, ${message}: ${String(fields?.error)}`);
      queues.push(await queueNames(database.url));
    }
    expect(failures).toEqual([]);
    expect(queues).toEqual(Array.from({ length: ROUNDS }, () => ["dossier-run-ready", "dossier-webhook-attempt"]));
  }, 120_000);

  it("a process frozen while it sets up holds the others back only until PostgreSQL ends its idle transaction", async () => {
    const database = await createMigratedPostgresDatabase();
    cleanups.push(() => database.drop());
    let thaw!: () => void;
    const frozen = underSetupLock(
      pg.Client,
      { url: database.url, timeouts: { idleInTransactionMs: 1_000 }, applicationName: "frozen-setup" },
      () => new Promise<string>((resolve) => (thaw = () => resolve("frozen set up"))),
    );
    cleanups.push(async () => {
      thaw();
      await frozen;
    });
    const held = async () =>
      (
        await queryOnce<{ n: number }>(database.url, "SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted", [
          PG_BOSS_SETUP_LOCK_KEY,
        ])
      )[0]!.n;
    await expect.poll(held, { timeout: 10_000 }).toBe(1);
    // The next setup runs while the frozen one still has not finished (without the bound it would
    // wait for the statement timeout, a minute); the frozen one, thawed, still finishes its own.
    let frozenDone = false;
    void frozen.then(() => (frozenDone = true));
    const next = await underSetupLock(pg.Client, { url: database.url, applicationName: "next-setup" }, async () => ({ frozenDone }));
    expect(next).toEqual({ frozenDone: false });
    thaw();
    expect(await frozen).toBe("frozen set up");
    expect(await held()).toBe(0);
  }, 30_000);
});
