// The README's webhook receiver (Integrations), run as written — only `@dossier/sdk` points at
// the SDK's source — in its own process, receiving real deliveries from a Dossier app: it prints
// each event once (a redelivery with the same webhook-id is acknowledged, not acted on again) and
// refuses a delivery that is not signed with its secret.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ArchiveWorkspaceDocument, CreateWebhookDocument, RedeliverWebhookEventDocument, WebhookDeliveriesDocument } from "../../sdk/generated/graphql.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { killAll, projectRoot, type Spawned, spawnShell } from "../support/processes.js";
import { readmeBlocks } from "../support/readme.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const running: Spawned[] = [];
let t: TestApp | undefined;
let dir: string | undefined;
afterEach(async () => {
  await killAll(running);
  await t?.close();
  t = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("the README's webhook receiver", () => {
  it("verifies real deliveries with verifyWebhook, acts once per event, and refuses an unsigned one", async () => {
    const block = readmeBlocks().find((b) => b.lang === "ts" && b.text.includes("verifyWebhook(body, request.headers"));
    expect(block, "README.md has the receiver example").toBeDefined();
    dir = mkdtempSync(path.join(tmpdir(), "dossier-readme-receiver-"));
    const file = path.join(dir, "receiver.ts");
    writeFileSync(file, block!.text.replace('"@dossier/sdk"', JSON.stringify(path.join(projectRoot, "sdk/index.ts"))));
    const port = await freePort();

    t = await startTestApp("pglite", { webhooks: { deliver: true, allowedHosts: [`127.0.0.1:${port}`], retryDelaysSeconds: [0.2], pollMs: 100 } });
    const created = await t.client.request(CreateWebhookDocument, { input: { url: `http://127.0.0.1:${port}/`, events: ["WORKSPACE_ARCHIVED"] } });
    const { secret, webhook } = expectType(created.createWebhook, "CreateWebhookSuccess");
    const receiver = spawnShell(`node --import tsx ${JSON.stringify(file)}`, { env: { WEBHOOK_SECRET: secret, PORT: String(port) } });
    running.push(receiver);
    await vi.waitFor(async () => expect((await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" })).status).toBe(400), { timeout: 30_000 });

    const workspace = await createWorkspace(t.client);
    await t.client.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    await receiver.waitForOutput(/WORKSPACE_ARCHIVED the workspace was archived/, 20_000);
    const first = await vi.waitFor(
      async () => {
        const read = expectType((await t!.client.request(WebhookDeliveriesDocument, { id: webhook.id })).node!, "Webhook");
        expect(read.deliveries.edges.map((edge) => edge.node)).toHaveLength(1);
        return read.deliveries.edges.map((edge) => edge.node)[0]!;
      },
      { timeout: 10_000 },
    );
    expect(first.statusCode).toBe(204);
    await t.client.request(RedeliverWebhookEventDocument, { input: { webhookId: webhook.id, eventId: first.eventId } });
    await vi.waitFor(
      async () => {
        const read = expectType((await t!.client.request(WebhookDeliveriesDocument, { id: webhook.id })).node!, "Webhook");
        expect(read.deliveries.edges.map((edge) => edge.node).map((d) => d.statusCode)).toEqual([204, 204]);
      },
      { timeout: 10_000 },
    );
    expect(receiver.output().match(/WORKSPACE_ARCHIVED/g)).toHaveLength(1);
  });
});
