// Two deliverers of one attempt at once — a pg-boss job retried while its first run still goes
// on, two servers' relays — send it twice at most, and the attempt is recorded once: one attempt
// row, the message moved on once.
import { afterEach, describe, expect, it } from "vitest";
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
});
