// One principal's endpoint that never answers does not slow another principal's deliveries on
// PostgreSQL: its attempt holds one delivery place for WEBHOOK_TIMEOUT_MS, and the other places
// are refilled as their attempts finish, as on the embedded queue — an attempt that hangs never
// holds the deliveries fetched with it, nor those fetched after it, until its timeout.
import { afterEach, describe, expect, it, vi } from "vitest";
import { ArchiveWorkspaceDocument, CreateWebhookDocument } from "../../sdk/generated/graphql.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

const TIMEOUT_MS = 6_000;
const EVENTS = 8;

describe.runIf(backends.includes("postgres"))("webhook deliveries beside an endpoint that never answers on postgres", () => {
  let t: TestApp | undefined;
  const receivers: Receiver[] = [];
  afterEach(async () => {
    await t?.close();
    t = undefined;
    for (const receiver of receivers.splice(0)) await receiver.close();
  });

  it("another principal's events are all delivered before the hanging attempt's timeout ends", async () => {
    const slow = await startReceiver(Array.from({ length: 20 }, () => "hang" as const));
    const fast = await startReceiver();
    receivers.push(slow, fast);
    t = await startTestApp("postgres", {
      authRequired: true,
      webhooks: { deliver: true, allowedHosts: [slow.host, fast.host], retryDelaysSeconds: [0.2, 0.2, 0.2], pollMs: 100, timeoutMs: TIMEOUT_MS },
    });
    const [hanging, other] = [t.as(await t.createPrincipal("hanging")), t.as(await t.createPrincipal("other"))];
    for (const [client, receiver] of [
      [hanging, slow],
      [other, fast],
    ] as const)
      expectType(
        (await client.request(CreateWebhookDocument, { input: { url: receiver.url, events: ["WORKSPACE_ARCHIVED"] } })).createWebhook,
        "CreateWebhookSuccess",
      );
    const workspaces = await Promise.all(Array.from({ length: EVENTS }, () => createWorkspace(other)));
    const archive = async (client: typeof other, workspaceId: string) =>
      expectType((await client.request(ArchiveWorkspaceDocument, { input: { workspaceId } })).archiveWorkspace, "ArchiveWorkspaceSuccess");

    await archive(hanging, (await createWorkspace(hanging)).id);
    // The hanging endpoint's attempt holds a place now, until TIMEOUT_MS after it arrived.
    await vi.waitFor(() => expect(slow.received).toHaveLength(1), { timeout: 10_000, interval: 20 });
    await Promise.all(workspaces.map((workspace) => archive(other, workspace.id)));
    // Halfway through it: the attempt's own timer started before its request arrived.
    const before = slow.received[0]!.at + TIMEOUT_MS / 2;
    await vi.waitFor(() => expect(fast.received.length === EVENTS || Date.now() > before + 2_000).toBe(true), { timeout: 30_000, interval: 20 });

    expect(fast.received.filter((request) => request.at < before)).toHaveLength(EVENTS);
    expect(slow.received.filter((request) => request.at < before)).toHaveLength(1);
  }, 60_000);
});
