// Webhook deliveries shared fairly across principals (issue 36): one principal's 20 endpoints
// that never answer hold every delivery place for a whole timeout, yet another principal's
// event is delivered within one delivery timeout of being recorded — on the embedded queue and
// through pg-boss on PostgreSQL, where it is not held back either behind another principal's
// backlog of a thousand events still to be moved into the queue.
import { afterEach, describe, expect, it, vi } from "vitest";
import { ArchiveWorkspaceDocument, CreateWebhookDocument } from "../../sdk/generated/graphql.js";
import type { DossierClient } from "../../sdk/client.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

const TIMEOUT_MS = 2_000;

describe.each(backends)("webhook deliveries across principals on %s", (backend) => {
  let t: TestApp | undefined;
  const receivers: Receiver[] = [];
  afterEach(async () => {
    await t?.close();
    t = undefined;
    for (const receiver of receivers.splice(0)) await receiver.close();
  });

  async function archive(client: DossierClient) {
    const workspace = await createWorkspace(client);
    expectType((await client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } })).archiveWorkspace, "ArchiveWorkspaceSuccess");
  }

  it("another principal's event is delivered within one delivery timeout while 20 slow endpoints hold the places", async () => {
    const slow = await startReceiver(Array.from({ length: 200 }, () => "hang" as const));
    const fast = await startReceiver();
    receivers.push(slow, fast);
    t = await startTestApp(backend, {
      authRequired: true,
      webhooks: { deliver: true, allowedHosts: [slow.host, fast.host], retryDelaysSeconds: [0.2, 0.2, 0.2], pollMs: 100, timeoutMs: TIMEOUT_MS },
    });
    const [hog, other] = [t.as(await t.createPrincipal("hog")), t.as(await t.createPrincipal("other"))];
    for (let i = 0; i < 20; i += 1) {
      const created = await hog.request(CreateWebhookDocument, { input: { url: `${slow.url}?endpoint=${i}`, events: ["WORKSPACE_ARCHIVED"] } });
      expectType(created.createWebhook, "CreateWebhookSuccess");
    }
    expectType(
      (await other.request(CreateWebhookDocument, { input: { url: fast.url, events: ["WORKSPACE_ARCHIVED"] } })).createWebhook,
      "CreateWebhookSuccess",
    );

    await archive(hog);
    // The slow endpoints hold the delivery places now.
    await vi.waitFor(() => expect(slow.received.length).toBeGreaterThanOrEqual(4), { timeout: 10_000 });
    const recorded = Date.now();
    await archive(other);
    await vi.waitFor(() => expect(fast.received).toHaveLength(1), { timeout: 30_000 });
    const waited = fast.received[0]!.at - recorded;
    // One timeout for a place to free, plus the queue's poll and relay.
    expect(waited).toBeLessThan(TIMEOUT_MS + 1_500);
  }, 60_000);
  it.runIf(backend === "postgres")(
    "another principal's event is not held behind a backlog of 1,000 events still to be queued",
    async () => {
      const busy = await startReceiver();
      const fast = await startReceiver();
      receivers.push(busy, fast);
      t = await startTestApp(backend, {
        authRequired: true,
        webhooks: { deliver: true, allowedHosts: [busy.host, fast.host], retryDelaysSeconds: [0.2], pollMs: 1_000, timeoutMs: TIMEOUT_MS },
      });
      const [hog, other] = [t.as(await t.createPrincipal("hog")), t.as(await t.createPrincipal("other"))];
      for (let i = 0; i < 20; i += 1)
        expectType(
          (await hog.request(CreateWebhookDocument, { input: { url: `${busy.url}?endpoint=${i}`, events: ["WORKSPACE_ARCHIVED"] } })).createWebhook,
          "CreateWebhookSuccess",
        );
      expectType(
        (await other.request(CreateWebhookDocument, { input: { url: fast.url, events: ["WORKSPACE_ARCHIVED"] } })).createWebhook,
        "CreateWebhookSuccess",
      );
      // 50 archives × 20 endpoints: 1,000 events of one principal, every endpoint answering at once.
      for (let i = 0; i < 50; i += 10) await Promise.all(Array.from({ length: 10 }, () => archive(hog)));
      const recorded = Date.now();
      await archive(other);
      await vi.waitFor(() => expect(fast.received).toHaveLength(1), { timeout: 60_000, interval: 50 });
      const waited = fast.received[0]!.at - recorded;
      // The backlog is far from delivered: the other event went ahead of it.
      expect(busy.received.length).toBeLessThan(1_000);
      expect(waited).toBeLessThan(TIMEOUT_MS + 1_500);
    },
    120_000,
  );
});
