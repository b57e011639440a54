// A server delivering webhooks does no work while none are due: its queue looks at the outbox, and
// on PostgreSQL its pg-boss workers look for jobs, when something makes an attempt due — an event
// committed, a retry falling due, a redelivery, an endpoint enabled again — and otherwise once
// every WEBHOOK_IDLE_POLL_MS, not every second (the outbox) and every half-second per place (pg-boss).
// The attempts made on those wake-ups are still made on time.
import { afterEach, describe, expect, it } from "vitest";
import { startWireCounter, type WireCounter } from "../../bench/pg-wire-count.js";
import { ArchiveWorkspaceDocument } from "../../sdk/generated/graphql.js";
import type { Database } from "../../src/db/open-database.js";
import { silentLogger } from "../../src/logger.js";
import { createOutboundHttp } from "../../src/outbound/outbound-http.js";
import { InProcessWebhookQueue } from "../../src/webhooks/delivery/in-process-webhook-queue.js";
import { PgBossWebhookQueue } from "../../src/webhooks/delivery/pg-boss-webhook-queue.js";
import { WebhookDelivery } from "../../src/webhooks/delivery/webhook-delivery.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { startReceiver } from "../support/webhook-receiver.js";

/** The window watched with nothing due. */
const WATCHED_MS = 3_000;
/** pg-boss's look for a job (fetchNextJob), as the wire counter keeps its text: the start of it. */
const FETCH = /^WITH next as \( SELECT id, singleton_key, policy FROM pgboss\.job/;

/** The database's client, its outbox statements counted (the queues' own, raw). */
function countedPrisma(db: Database): { prisma: Database["prisma"]; statements: () => number } {
  let statements = 0;
  const prisma = db.prisma;
  const counted = {
    $queryRawUnsafe: (sql: string, ...values: unknown[]) => {
      statements++;
      return prisma.$queryRawUnsafe(sql, ...values);
    },
    $executeRawUnsafe: (sql: string, ...values: unknown[]) => {
      statements++;
      return prisma.$executeRawUnsafe(sql, ...values);
    },
    webhookMessage: prisma.webhookMessage,
  };
  return { prisma: counted as unknown as Database["prisma"], statements: () => statements };
}

const fetches = (wire: WireCounter) => [...wire.counts().texts].filter(([text]) => FETCH.test(text)).reduce((sum, [, n]) => sum + n, 0);

describe.each(backends)("webhook deliveries at rest on %s", (backend) => {
  let t: TestApp | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await t?.close();
    t = undefined;
  });

  it("with nothing due, looks once at the start and not again within three seconds", { timeout: 60_000 }, async () => {
    let url: string | undefined;
    t = await startTestApp(backend, {
      database: async () => {
        const opened = await openMigratedTestDatabase(backend);
        url = opened.url;
        return opened;
      },
    });
    const { prisma, statements } = countedPrisma(t.app.db);
    const outbound = createOutboundHttp({ allowedHosts: [], setting: "WEBHOOK_ALLOWED_HOSTS" });
    const delivery = new WebhookDelivery({ prisma: t.app.db.prisma, webhooks: t.app.services.webhooks, outbound, delaysSeconds: [60], logger: silentLogger });
    cleanups.push(() => outbound.close());
    if (backend === "pglite") {
      const queue = new InProcessWebhookQueue({ prisma, delivery, logger: silentLogger });
      cleanups.push(() => queue.close());
      queue.start();
      await new Promise((resolve) => setTimeout(resolve, WATCHED_MS));
      // The start's look only (every second before: four).
      expect(statements()).toBe(1);
      return;
    }
    const wire = await startWireCounter(url!);
    cleanups.push(() => wire.close());
    const queue = new PgBossWebhookQueue({ url: wire.url, prisma, delivery, logger: silentLogger });
    cleanups.push(() => queue.close());
    queue.start();
    // Started: each of the four places has looked for a job once, and the relay has looked at the outbox.
    await expect.poll(() => fetches(wire), { timeout: 30_000 }).toBe(4);
    await expect.poll(statements, { timeout: 10_000 }).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, WATCHED_MS));
    // Before: 24 more looks for jobs (each place every half-second) and 6 more statements (the relay every second).
    expect(fetches(wire)).toBe(4);
    expect(statements()).toBe(2);
  });

  it("still makes a retry when it falls due, and a redelivery at once", { timeout: 60_000 }, async () => {
    const receiver = await startReceiver([500]);
    cleanups.push(() => receiver.close());
    // No pollMs: the idle look (5 s) is far later than what is measured.
    t = await startTestApp(backend, { webhooks: { deliver: true, allowedHosts: [receiver.host], retryDelaysSeconds: [0.5] } });
    const workspace = await createWorkspace(t.client);
    // The development principal, whom keyless requests act as.
    const principal = await t.app.db.prisma.principal.findFirstOrThrow();
    const { webhook } = await t.app.services.webhooks.create({ principalId: principal.id }, { url: receiver.url, events: ["WORKSPACE_ARCHIVED"] });
    expectType((await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } })).archiveWorkspace, "ArchiveWorkspaceSuccess");
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(2);
    const [first, retry] = receiver.received;
    expect(retry!.at - first!.at).toBeGreaterThanOrEqual(500);
    expect(retry!.at - first!.at).toBeLessThan(2_500);
    const eventId = String(first!.headers["webhook-id"]);
    const asked = Date.now();
    await t.app.services.webhooks.redeliver({ principalId: principal.id }, { webhookId: webhook.id, eventId });
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(3);
    expect(receiver.received[2]!.at - asked).toBeLessThan(2_500);
  });
});
