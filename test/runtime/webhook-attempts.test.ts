// Two deliverers of one attempt at once — a pg-boss job retried while its first run still goes
// on, two servers' relays — send it twice at most, and the attempt is recorded once: one attempt
// row, the message moved on once. On PostgreSQL, relaying an attempt again (a crash between
// queueing it and marking it relayed) adds no second job while the first waits, and a job for an
// attempt already made sends nothing.
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/logger.js";
import { createOutboundHttp } from "../../src/outbound/outbound-http.js";
import { PgBossWebhookQueue } from "../../src/webhooks/delivery/pg-boss-webhook-queue.js";
import { WebhookDelivery } from "../../src/webhooks/delivery/webhook-delivery.js";
import { openMigratedTestDatabase } from "../support/databases.js";
import { startReceiver } from "../support/webhook-receiver.js";
import { recordAttempt } from "../../src/domain/webhooks/webhook-attempts.js";
import { recordWebhookEvent } from "../../src/domain/webhooks/webhook-events.js";
import { backends } from "../support/databases.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

describe.each(backends)("webhook attempts on %s", (backend) => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it("records one attempt when two deliverers record the same attempt at once", async () => {
    t = await startTestApp(backend);
    const prisma = t.app.db.prisma;
    const principal = await prisma.principal.create({ data: { name: "Alice" } });
    await prisma.webhook.create({ data: { ownerId: principal.id, url: "https://hooks.example.com/", events: ["WORKSPACE_ARCHIVED"], secret: "sealed" } });
    await prisma.$transaction((tx) => recordWebhookEvent(tx, { ownerId: principal.id, type: "WORKSPACE_ARCHIVED", data: { workspaceId: "x", summary: "s" } }));
    const message = await prisma.webhookMessage.findFirstOrThrow();
    const failed = { statusCode: 500, durationMs: 3, error: "HTTP 500" };
    const results = await Promise.all([1, 2, 3].map(() => prisma.$transaction((tx) => recordAttempt(tx, message, failed, { delaysSeconds: [60] }))));
    expect(results.filter((next) => next !== null)).toHaveLength(1);
    expect(await prisma.webhookAttempt.count()).toBe(1);
    expect(await prisma.webhookMessage.findFirstOrThrow()).toMatchObject({ status: "PENDING", attempts: 1 });
  });

  it.runIf(backend === "postgres")("relays an attempt into one pg-boss job however often it is relayed, and a stale job sends nothing", async () => {
    const receiver = await startReceiver();
    let url: string | undefined;
    t = await startTestApp(backend, {
      webhooks: { allowedHosts: [receiver.host] },
      database: async () => {
        const opened = await openMigratedTestDatabase(backend);
        url = opened.url;
        return opened;
      },
    });
    const prisma = t.app.db.prisma;
    const outbound = createOutboundHttp({ allowedHosts: [receiver.host], setting: "WEBHOOK_ALLOWED_HOSTS" });
    const delivery = new WebhookDelivery({ prisma, webhooks: t.app.services.webhooks, outbound, delaysSeconds: [60], logger: silentLogger });
    const queue = new PgBossWebhookQueue({ url: url!, prisma, delivery, logger: silentLogger, pollMs: 60_000 });
    try {
      const principal = await prisma.principal.create({ data: { name: "Alice" } });
      await t.app.services.webhooks.create({ principalId: principal.id }, { url: receiver.url, events: ["WORKSPACE_ARCHIVED"] });
      await prisma.$transaction((tx) =>
        recordWebhookEvent(tx, { ownerId: principal.id, type: "WORKSPACE_ARCHIVED", data: { workspaceId: "x", summary: "s" } }),
      );
      // Due in a minute: its job waits.
      await prisma.webhookMessage.updateMany({ data: { nextAttemptAt: new Date(Date.now() + 60_000) } });
      queue.start();
      const jobs = async () =>
        (await prisma.$queryRawUnsafe<{ n: number }[]>("SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'dossier-webhook-attempt'"))[0]!.n;
      await expect.poll(jobs, { timeout: 20_000 }).toBe(1);
      await expect.poll(async () => (await prisma.webhookMessage.findFirstOrThrow()).relayedAt, { timeout: 5_000 }).not.toBeNull();
      // As if the relay had died before marking it: relayed again, still one job.
      await prisma.webhookMessage.updateMany({ data: { relayedAt: null } });
      queue.wake();
      await expect.poll(async () => (await prisma.webhookMessage.findFirstOrThrow()).relayedAt, { timeout: 5_000 }).not.toBeNull();
      expect(await jobs()).toBe(1);
      // The attempt was made meanwhile (elsewhere): the job for attempt 0 sends nothing.
      const message = await prisma.webhookMessage.findFirstOrThrow();
      await prisma.webhookMessage.update({ where: { id: message.id }, data: { attempts: 1 } });
      expect(await delivery.deliver(message.id, 0)).toBeNull();
      expect(receiver.received).toHaveLength(0);
    } finally {
      await queue.close();
      await outbound.close();
      await receiver.close();
    }
  });

  it.runIf(backend === "postgres")("delivers a message whose pg-boss job failed for good: the relay relays it again", async () => {
    const receiver = await startReceiver();
    let url: string | undefined;
    t = await startTestApp(backend, {
      webhooks: { allowedHosts: [receiver.host] },
      database: async () => {
        const opened = await openMigratedTestDatabase(backend);
        url = opened.url;
        return opened;
      },
    });
    const prisma = t.app.db.prisma;
    const outbound = createOutboundHttp({ allowedHosts: [receiver.host], setting: "WEBHOOK_ALLOWED_HOSTS" });
    const real = new WebhookDelivery({ prisma, webhooks: t.app.services.webhooks, outbound, delaysSeconds: [60], logger: silentLogger });
    // The attempt's job throws (as when the database refuses its record) until told otherwise;
    // with no retries, pg-boss gives the job up at its first failure.
    let refusing = true;
    const delivery = {
      deliver: (messageId: string, attempts: number) =>
        refusing ? Promise.reject(new Error("the attempt could not be recorded")) : real.deliver(messageId, attempts),
    } as WebhookDelivery;
    const queue = new PgBossWebhookQueue({ url: url!, prisma, delivery, logger: silentLogger, pollMs: 200, retryLimit: 0, relayAgainAfterMs: 500 });
    try {
      const principal = await prisma.principal.create({ data: { name: "Alice" } });
      await t.app.services.webhooks.create({ principalId: principal.id }, { url: receiver.url, events: ["WORKSPACE_ARCHIVED"] });
      await prisma.$transaction((tx) =>
        recordWebhookEvent(tx, { ownerId: principal.id, type: "WORKSPACE_ARCHIVED", data: { workspaceId: "x", summary: "s" } }),
      );
      queue.start();
      const failed = async () =>
        (
          await prisma.$queryRawUnsafe<{ n: number }[]>("SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'dossier-webhook-attempt' AND state = 'failed'")
        )[0]!.n;
      await expect.poll(failed, { timeout: 20_000 }).toBeGreaterThanOrEqual(1);
      expect(await prisma.webhookMessage.findFirstOrThrow()).toMatchObject({ status: "PENDING", attempts: 0 });
      expect(receiver.received).toHaveLength(0);
      refusing = false;
      // Relayed again as a new job for the same attempt, and delivered once it runs.
      await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(1);
      await expect.poll(async () => (await prisma.webhookMessage.findFirstOrThrow()).status, { timeout: 5_000 }).toBe("SUCCEEDED");
      expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({ type: "WORKSPACE_ARCHIVED" });
    } finally {
      await queue.close();
      await outbound.close();
      await receiver.close();
    }
  });

  it.runIf(backend === "postgres")("delivers an event it was woken for while pg-boss was still starting", async () => {
    const receiver = await startReceiver();
    let url: string | undefined;
    t = await startTestApp(backend, {
      webhooks: { allowedHosts: [receiver.host] },
      database: async () => {
        const opened = await openMigratedTestDatabase(backend);
        url = opened.url;
        return opened;
      },
    });
    const prisma = t.app.db.prisma;
    const outbound = createOutboundHttp({ allowedHosts: [receiver.host], setting: "WEBHOOK_ALLOWED_HOSTS" });
    const delivery = new WebhookDelivery({ prisma, webhooks: t.app.services.webhooks, outbound, delaysSeconds: [60], logger: silentLogger });
    const queue = new PgBossWebhookQueue({ url: url!, prisma, delivery, logger: silentLogger, pollMs: 60_000 });
    const waking = setInterval(() => queue.wake(), 1);
    try {
      const principal = await prisma.principal.create({ data: { name: "Alice" } });
      await t.app.services.webhooks.create({ principalId: principal.id }, { url: receiver.url, events: ["WORKSPACE_ARCHIVED"] });
      await prisma.$transaction((tx) =>
        recordWebhookEvent(tx, { ownerId: principal.id, type: "WORKSPACE_ARCHIVED", data: { workspaceId: "x", summary: "s" } }),
      );
      // Woken every millisecond from the start: also between pg-boss's start and its queue's creation.
      queue.start();
      await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(1);
    } finally {
      clearInterval(waking);
      await queue.close();
      await outbound.close();
      await receiver.close();
    }
  });
});
