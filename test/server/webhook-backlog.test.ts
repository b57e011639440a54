// One principal's backlog of due webhook messages does not slow everyone's deliveries: the
// embedded delivery's poll and the PostgreSQL delivery's relay read each webhook's next few
// messages, not every pending one. Principal A has 5,000 due messages, B one: each statement reads
// fewer than 1,000 message rows, counted in its executed plan, and B's message is among the next.
import { afterEach, describe, expect, it } from "vitest";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { DUE_MESSAGES } from "../../src/webhooks/delivery/in-process-webhook-queue.js";
import { WAITING_MESSAGES } from "../../src/webhooks/delivery/pg-boss-webhook-queue.js";
import { backends, openMigratedTestDatabase } from "../support/databases.js";
import { executedPlan, rowsScanned } from "../support/plan-rows.js";

const BACKLOG = 5_000;
const ROWS_BOUND = 1_000;

let dispose: (() => Promise<void>) | undefined;
afterEach(async () => {
  await dispose?.();
  dispose = undefined;
});

/** A principal with one webhook and `count` messages due a minute ago; the id of its last. */
async function dueMessages(prisma: PrismaClient, name: string, count: number): Promise<string> {
  const owner = await prisma.principal.create({ data: { name } });
  const webhook = await prisma.webhook.create({ data: { ownerId: owner.id, url: "https://example.test/hook", events: ["RUN_SUCCEEDED"], secret: "s" } });
  await prisma.$executeRawUnsafe(
    `INSERT INTO webhook_message (id, webhook_id, event_id, type, body, next_attempt_at)
     SELECT $1 || '-' || g, $1, 'event-' || g, 'RUN_SUCCEEDED', '{}', now() - interval '1 minute' + g * interval '1 millisecond'
       FROM generate_series(1, $2::int) g`,
    webhook.id,
    count,
  );
  return `${webhook.id}-${count}`;
}

describe.each(backends)("webhook deliveries beside a principal's backlog on %s", (backend) => {
  it(`read fewer than ${ROWS_BOUND} message rows with ${BACKLOG} of another principal's messages due`, async () => {
    const opened = await openMigratedTestDatabase(backend);
    dispose = opened.dispose;
    const prisma = opened.db.prisma;
    await dueMessages(prisma, "A", BACKLOG);
    const bs = await dueMessages(prisma, "B", 1);
    const query = (sql: string, ...values: unknown[]) => prisma.$queryRawUnsafe<Record<string, unknown>[]>(sql, ...values);

    expect(rowsScanned(await executedPlan(query, DUE_MESSAGES, [], 8), "webhook_message")).toBeLessThan(ROWS_BOUND);
    const polled = await prisma.$queryRawUnsafe<{ id: string }[]>(DUE_MESSAGES, [], 2);
    expect(polled.map((m) => m.id)).toContain(bs);

    // The relay passes over A's messages relayed already (the first 2,000, due first).
    await prisma.$executeRawUnsafe(
      `UPDATE webhook_message SET relayed_at = now() WHERE id IN (SELECT id FROM webhook_message WHERE webhook_id <> $1 ORDER BY next_attempt_at LIMIT 2000)`,
      bs.replace(/-1$/, ""),
    );
    expect(rowsScanned(await executedPlan(query, WAITING_MESSAGES), "webhook_message")).toBeLessThan(ROWS_BOUND);
    const relayed = await prisma.$queryRawUnsafe<{ id: string }[]>(WAITING_MESSAGES);
    expect(relayed.slice(0, 2).map((m) => m.id)).toContain(bs);
  }, 240_000);
});
