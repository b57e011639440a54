// Webhooks (issue 22) against a real receiver HTTP server that verifies every delivery with the
// `standardwebhooks` library: signed events about the owner's objects only, retries with one
// event id, the attempts as `deliveries` shows them, redelivery, secret rotation, disabling after
// the last retry, and the outbound guard. On PostgreSQL the deliveries go through pg-boss.
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  ArchiveWorkspaceDocument,
  CreateWebhookDocument,
  DeleteWebhookDocument,
  DeleteWorkspaceDocument,
  NodeDocument,
  RedeliverWebhookEventDocument,
  RotateWebhookSecretDocument,
  UpdateWebhookDocument,
  WebhookDeliveriesDocument,
  type WebhookEventType,
  WebhooksDocument,
} from "../../sdk/generated/graphql.js";
import type { DossierClient } from "../../sdk/client.js";
import { verifyWebhook } from "../../sdk/webhooks.js";
import { SecretBox } from "../../src/domain/secret-box.js";
import { backends } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { type Answer, type Receiver, startReceiver, ALL } from "../support/webhook-receiver.js";

describe.each(backends)("webhooks on %s", (backend) => {
  let t: TestApp | undefined;
  const receivers: Receiver[] = [];
  afterEach(async () => {
    await t?.close();
    t = undefined;
    for (const receiver of receivers.splice(0)) await receiver.close();
  });

  async function receiver(answers: Answer[] = []): Promise<Receiver> {
    const started = await startReceiver(answers);
    receivers.push(started);
    return started;
  }

  async function start(allowed: Receiver[], retryDelaysSeconds = [0.2, 0.2, 0.2], resolve?: (host: string) => Promise<string[]>, timeoutMs?: number) {
    t = await startTestApp(backend, {
      authRequired: true,
      webhooks: { deliver: true, allowedHosts: allowed.map((r) => r.host), retryDelaysSeconds, pollMs: 100, resolve, timeoutMs },
    });
    return t;
  }

  async function createWebhook(client: DossierClient, url: string, events: WebhookEventType[] = ALL) {
    const created = await client.request(CreateWebhookDocument, { input: { url, events, description: "tests" } });
    return expectType(created.createWebhook, "CreateWebhookSuccess");
  }

  async function deliveries(client: DossierClient, id: string) {
    return expectType((await client.request(WebhookDeliveriesDocument, { id })).node!, "Webhook");
  }

  it("signs each event so that standardwebhooks verifies it, with global ids and a summary, and only the owner's events", async () => {
    const mine = await receiver();
    const theirs = await receiver();
    const app = await start([mine, theirs]);
    const alice = app.as(await app.createPrincipal("Alice"));
    const bob = app.as(await app.createPrincipal("Bob"));
    const { secret, webhook } = await createWebhook(alice, mine.url);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);
    await createWebhook(bob, theirs.url);

    const workspace = await createWorkspace(alice);
    expectType((await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } })).archiveWorkspace, "ArchiveWorkspaceSuccess");
    await vi.waitFor(() => expect(mine.received).toHaveLength(1), { timeout: 10_000 });
    const [request] = mine.received;
    const event = mine.verify(request!, secret);
    expect(event).toMatchObject({ type: "WORKSPACE_ARCHIVED", data: { workspaceId: workspace.id, summary: "the workspace was archived" } });
    expect(request!.headers["webhook-id"]).toMatch(/^msg_/);
    expect(request!.headers["content-type"]).toBe("application/json");
    // A wrong secret does not verify.
    expect(() => mine.verify(request!, `whsec_${Buffer.alloc(32, 1).toString("base64")}`)).toThrow();
    // Archiving again changes nothing and reports nothing; Bob hears nothing of Alice's workspace.
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    await alice.request(DeleteWorkspaceDocument, { input: { workspaceId: workspace.id } });
    await vi.waitFor(() => expect(mine.received).toHaveLength(2), { timeout: 10_000 });
    expect(mine.verify(mine.received[1]!, secret).type).toBe("WORKSPACE_DELETED");
    expect(theirs.received).toHaveLength(0);

    // The attempt is recorded once the answer is in.
    const list = await vi.waitFor(
      async () => {
        const current = await deliveries(alice, webhook.id);
        expect(current.deliveries.edges.map((edge) => edge.node)).toHaveLength(2);
        return current;
      },
      { timeout: 5_000 },
    );
    expect(list.deliveries.edges.map((edge) => edge.node).map((d) => [d.attempt, d.statusCode, d.error, d.nextRetryAt])).toEqual([
      [1, 200, null, null],
      [1, 200, null, null],
    ]);
    expect(list.deliveries.edges.map((edge) => edge.node)[1]!.eventId).toBe(request!.headers["webhook-id"]);
  });

  it("retries an endpoint that answers 500 twice, with one event id, and shows the three attempts", async () => {
    const flaky = await receiver([500, 500]);
    const app = await start([flaky]);
    const alice = app.as(await app.createPrincipal("Alice"));
    const { secret, webhook } = await createWebhook(alice, flaky.url, ["WORKSPACE_ARCHIVED"]);
    const workspace = await createWorkspace(alice);
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    await vi.waitFor(() => expect(flaky.received).toHaveLength(3), { timeout: 15_000 });
    const ids = new Set(flaky.received.map((r) => String(r.headers["webhook-id"])));
    expect(ids.size).toBe(1);
    for (const request of flaky.received) expect(flaky.verify(request, secret).type).toBe("WORKSPACE_ARCHIVED");
    // Each retry waits for its delay (0.2 s here).
    expect(flaky.received[1]!.at - flaky.received[0]!.at).toBeGreaterThanOrEqual(190);

    const read = await vi.waitFor(
      async () => {
        const current = await deliveries(alice, webhook.id);
        expect(current.deliveries.edges.map((edge) => edge.node)).toHaveLength(3);
        return current;
      },
      { timeout: 5_000 },
    );
    expect(read.deliveries.edges.map((edge) => edge.node).map((d) => [d.attempt, d.statusCode, d.error])).toEqual([
      [3, 200, null],
      [2, 500, "HTTP 500"],
      [1, 500, "HTTP 500"],
    ]);
    expect(read.deliveries.edges.map((edge) => edge.node)[1]!.nextRetryAt).not.toBeNull();
    expect(read.deliveries.edges.map((edge) => edge.node).every((d) => d.eventId === [...ids][0] && d.durationMs >= 0)).toBe(true);
    expect(read.enabled).toBe(true);
    if (backend === "postgres") {
      // Scheduled through pg-boss: one job per attempt, in the app's own database.
      const jobs = await app.app.db.prisma.$queryRawUnsafe<{ n: number }[]>("SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'dossier-webhook-attempt'");
      expect(jobs[0]!.n).toBe(3);
    }
    // A page of one, then the next after it.
    const first = await alice.request(WebhookDeliveriesDocument, { id: webhook.id, first: 1 });
    const after = expectType(first.node!, "Webhook").deliveries.edges.map((edge) => edge.node)[0]!.id;
    const next = expectType((await alice.request(WebhookDeliveriesDocument, { id: webhook.id, first: 5, after })).node!, "Webhook");
    expect(next.deliveries.edges.map((edge) => edge.node).map((d) => d.attempt)).toEqual([2, 1]);

    // Redelivery sends the same event again, under the same id.
    const redelivered = await alice.request(RedeliverWebhookEventDocument, { input: { webhookId: webhook.id, eventId: [...ids][0]! } });
    expectType(redelivered.redeliverWebhookEvent, "RedeliverWebhookEventSuccess");
    await vi.waitFor(() => expect(flaky.received).toHaveLength(4), { timeout: 10_000 });
    expect(flaky.received[3]!.headers["webhook-id"]).toBe([...ids][0]);
    const unknown = await alice.request(RedeliverWebhookEventDocument, { input: { webhookId: webhook.id, eventId: "msg_nothing" } });
    expectType(unknown.redeliverWebhookEvent, "NotFoundError");
  });

  it("disables the endpoint, saying why, once every retry failed", async () => {
    const down = await receiver([500, 503, 500, 500]);
    const app = await start([down], [0.1, 0.1]);
    const alice = app.as(await app.createPrincipal("Alice"));
    const { webhook } = await createWebhook(alice, down.url, ["WORKSPACE_ARCHIVED", "WORKSPACE_DELETED"]);
    const workspace = await createWorkspace(alice);
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    const disabled = await vi.waitFor(
      async () => {
        const current = await deliveries(alice, webhook.id);
        expect(current.enabled).toBe(false);
        return current;
      },
      { timeout: 15_000 },
    );
    expect(down.received).toHaveLength(3);
    expect(disabled.disabledReason).toMatch(/every attempt to deliver event msg_\w+ failed \(3 attempts; the last: HTTP 500\)/);
    expect(disabled.deliveries.edges.map((edge) => edge.node)[0]!.nextRetryAt).toBeNull();
    // A disabled endpoint hears nothing more until enabled again, and takes no redelivery.
    const redelivery = await alice.request(RedeliverWebhookEventDocument, {
      input: { webhookId: webhook.id, eventId: disabled.deliveries.edges.map((edge) => edge.node)[0]!.eventId },
    });
    expect(expectType(redelivery.redeliverWebhookEvent, "ValidationError").message).toMatch(/disabled/);
    await alice.request(DeleteWorkspaceDocument, { input: { workspaceId: workspace.id } });
    const enabled = await alice.request(UpdateWebhookDocument, { input: { id: webhook.id, enabled: true } });
    expect(expectType(enabled.updateWebhook, "UpdateWebhookSuccess").webhook).toMatchObject({ enabled: true, disabledReason: null });
    const again = await createWorkspace(alice);
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: again.id } });
    await vi.waitFor(() => expect(down.received).toHaveLength(4), { timeout: 10_000 });
    expect(JSON.parse(down.received[3]!.body)).toMatchObject({ type: "WORKSPACE_ARCHIVED", data: { workspaceId: again.id } });
  });

  it("signs with the old and the new secret after a rotation, each verifying on its own", async () => {
    const endpoint = await receiver();
    const app = await start([endpoint]);
    const alice = app.as(await app.createPrincipal("Alice"));
    const { secret: old, webhook } = await createWebhook(alice, endpoint.url, ["WORKSPACE_ARCHIVED"]);
    const rotated = expectType(
      (await alice.request(RotateWebhookSecretDocument, { input: { id: webhook.id } })).rotateWebhookSecret,
      "RotateWebhookSecretSuccess",
    );
    expect(rotated.secret).not.toBe(old);
    const overlap = Date.parse(rotated.webhook.previousSecretExpiresAt!) - Date.now();
    expect(overlap).toBeGreaterThan(23.9 * 3_600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3_600_000);
    const workspace = await createWorkspace(alice);
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    await vi.waitFor(() => expect(endpoint.received).toHaveLength(1), { timeout: 10_000 });
    const [request] = endpoint.received;
    expect(String(request!.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    // standardwebhooks accepts a header when any one signature matches: check each secret alone.
    expect(endpoint.verify(request!, rotated.secret).type).toBe("WORKSPACE_ARCHIVED");
    expect(endpoint.verify(request!, old).type).toBe("WORKSPACE_ARCHIVED");
    const [newest, previous] = String(request!.headers["webhook-signature"]).split(" ");
    const only = (signature: string) => ({ ...request!, headers: { ...request!.headers, "webhook-signature": signature } });
    expect(endpoint.verify(only(newest!), rotated.secret).type).toBe("WORKSPACE_ARCHIVED");
    expect(() => endpoint.verify(only(newest!), old)).toThrow();
    expect(endpoint.verify(only(previous!), old).type).toBe("WORKSPACE_ARCHIVED");
    // The SDK's verifyWebhook agrees, on the delivery as it arrived.
    await expect(verifyWebhook(request!.body, request!.headers, rotated.secret)).resolves.toMatchObject({ type: "WORKSPACE_ARCHIVED" });
    await expect(verifyWebhook(request!.body, request!.headers, old)).resolves.toMatchObject({ type: "WORKSPACE_ARCHIVED" });
    await expect(verifyWebhook(request!.body, only(newest!).headers, old)).rejects.toThrow(/no signature matches/);
  });

  it("keeps each principal's webhooks to themselves: another cannot see, update, rotate, redeliver or delete them", async () => {
    const endpoint = await receiver();
    const app = await start([endpoint]);
    const alice = app.as(await app.createPrincipal("Alice"));
    const bob = app.as(await app.createPrincipal("Bob"));
    const { webhook } = await createWebhook(alice, endpoint.url);
    expect((await bob.request(WebhooksDocument)).webhooks.edges.map((edge) => edge.node)).toEqual([]);
    expect((await bob.request(NodeDocument, { id: webhook.id })).node).toBeNull();
    expect((await alice.request(WebhooksDocument)).webhooks.edges.map((edge) => edge.node).map((w) => w.id)).toEqual([webhook.id]);
    const id = { id: webhook.id };
    expectType((await bob.request(UpdateWebhookDocument, { input: { ...id, url: "https://bob.example/hook" } })).updateWebhook, "NotFoundError");
    expectType((await bob.request(RotateWebhookSecretDocument, { input: id })).rotateWebhookSecret, "NotFoundError");
    expectType(
      (await bob.request(RedeliverWebhookEventDocument, { input: { webhookId: webhook.id, eventId: "msg_x" } })).redeliverWebhookEvent,
      "NotFoundError",
    );
    expectType((await bob.request(DeleteWebhookDocument, { input: id })).deleteWebhook, "NotFoundError");
    // Shown redacted: the path may hold a token (see test/server/sealed-urls.test.ts).
    expect((await alice.request(WebhooksDocument)).webhooks.edges.map((edge) => edge.node)[0]).toMatchObject({
      url: `http://${endpoint.host}/…/***`,
      enabled: true,
    });
    // A pending delivery goes with its endpoint.
    const workspace = await createWorkspace(alice);
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    expectType((await alice.request(DeleteWebhookDocument, { input: id })).deleteWebhook, "DeleteWebhookSuccess");
    expect((await alice.request(WebhooksDocument)).webhooks.edges.map((edge) => edge.node)).toEqual([]);
    expect(await app.app.db.prisma.webhookMessage.count()).toBe(0);
  });

  it("refuses an internal address at once, and a name that resolves inside the network when it is delivered", async () => {
    const inside = await receiver();
    const app = await start([], [0.1], async () => ["127.0.0.1"]);
    const alice = app.as(await app.createPrincipal("Alice"));
    // A trailing dot or capitals name the same host: normalised before the rules see it.
    for (const url of [
      "http://10.0.0.5/hook",
      "http://169.254.169.254/latest",
      "http://[::1]:8080/",
      "http://localhost:3000/",
      "http://LocalHost.:3000/",
      inside.url,
    ]) {
      const refused = expectType((await alice.request(CreateWebhookDocument, { input: { url, events: ALL } })).createWebhook, "ValidationError");
      expect(refused.issues[0]).toMatchObject({ field: "url", message: expect.stringContaining("WEBHOOK_ALLOWED_HOSTS") });
    }
    // user:pass@ could never be delivered, and would be stored in clear: refused at creation.
    const userinfo = await alice.request(CreateWebhookDocument, { input: { url: "https://user:s3cret@hooks.example.com/x", events: ALL } });
    expect(expectType(userinfo.createWebhook, "ValidationError").issues).toEqual([
      { field: "url", message: "must not carry a user name or password (user:pass@): authenticate with the webhook's signing secret instead" },
    ]);
    expectType((await alice.request(CreateWebhookDocument, { input: { url: "ftp://example.com/", events: ALL } })).createWebhook, "ValidationError");
    // A public-looking name that resolves to 127.0.0.1: refused where the socket connects.
    const port = inside.host.split(":")[1];
    const { webhook } = await createWebhook(alice, `http://hooks.example.test:${port}/hooks`, ["WORKSPACE_ARCHIVED"]);
    const workspace = await createWorkspace(alice);
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    const failed = await vi.waitFor(
      async () => {
        const current = await deliveries(alice, webhook.id);
        expect(current.enabled).toBe(false);
        return current;
      },
      { timeout: 10_000 },
    );
    // In the words a name that does not resolve gets: the owner cannot tell which internal names exist.
    expect(failed.deliveries.edges.map((edge) => edge.node)[0]!.error).toMatch(/does not resolve to an address this server may reach.*WEBHOOK_ALLOWED_HOSTS/);
    expect(inside.received).toHaveLength(0);
  });

  it("counts a redirect and an answer that does not come in time as failures, and follows no redirect", async () => {
    const target = await receiver();
    const endpoint = await receiver([{ redirect: target.url }, "hang"]);
    const app = await start([endpoint, target], [0.1, 0.1], undefined, 500);
    const alice = app.as(await app.createPrincipal("Alice"));
    const { webhook } = await createWebhook(alice, endpoint.url, ["WORKSPACE_ARCHIVED"]);
    const workspace = await createWorkspace(alice);
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    const read = await vi.waitFor(
      async () => {
        const current = await deliveries(alice, webhook.id);
        expect(current.deliveries.edges.map((edge) => edge.node)).toHaveLength(3);
        return current;
      },
      { timeout: 15_000 },
    );
    expect(read.deliveries.edges.map((edge) => edge.node).map((d) => [d.attempt, d.statusCode, d.error])).toEqual([
      [3, 200, null],
      [2, null, "no answer within 0.5 s"],
      [1, 302, "HTTP 302: redirects are not followed"],
    ]);
    expect(target.received).toHaveLength(0);
  });

  it("cannot create a webhook without a key to seal its secret with", async () => {
    t = await startTestApp(backend, { authRequired: true, mcp: { secrets: undefined } });
    const alice = t.as(await t.createPrincipal("Alice"));
    const refused = await alice.request(CreateWebhookDocument, { input: { url: "https://hooks.example.com/x", events: ["RUN_FAILED"] } });
    expect(expectType(refused.createWebhook, "ValidationError").issues[0]!.message).toMatch(/SECRETS_KEY/);
  });

  it("delivers as soon as the change commits, not at the next poll", async () => {
    const endpoint = await receiver();
    t = await startTestApp(backend, { authRequired: true, webhooks: { deliver: true, allowedHosts: [endpoint.host], pollMs: 60_000 } });
    const alice = t.as(await t.createPrincipal("Alice"));
    await createWebhook(alice, endpoint.url, ["WORKSPACE_ARCHIVED"]);
    // The first poll at start has passed; from now on only a wake-up can deliver within the minute.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (let i = 1; i <= 3; i += 1) {
      const workspace = await createWorkspace(alice);
      await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
      const committed = Date.now();
      await vi.waitFor(() => expect(endpoint.received).toHaveLength(i), { timeout: 15_000, interval: 10 });
      // Milliseconds when the machine is idle (measured: median 3 ms embedded, 9 ms PostgreSQL); far below the minute's poll under load too.
      expect(endpoint.received[i - 1]!.at - committed).toBeLessThan(10_000);
    }
  });

  it("sends nothing unsigned when the signing secret cannot be opened (another SECRETS_KEY)", async () => {
    const endpoint = await receiver();
    const app = await start([endpoint], [0.1]);
    const alice = app.as(await app.createPrincipal("Alice"));
    const { webhook } = await createWebhook(alice, endpoint.url, ["WORKSPACE_ARCHIVED"]);
    const foreign = new SecretBox(randomBytes(32)).seal("whsec_AAAA");
    await app.app.db.prisma.webhook.updateMany({ data: { secret: foreign } });
    const workspace = await createWorkspace(alice);
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    const read = await vi.waitFor(
      async () => {
        const current = await deliveries(alice, webhook.id);
        expect(current.enabled).toBe(false);
        return current;
      },
      { timeout: 10_000 },
    );
    expect(read.deliveries.edges.map((edge) => edge.node)[0]!.error).toMatch(/signing secret cannot be opened/);
    expect(endpoint.received).toHaveLength(0);
  });

  it("stops signing with the old secret 24 hours after a rotation", async () => {
    const endpoint = await receiver();
    let clock = Date.now();
    t = await startTestApp(backend, {
      authRequired: true,
      now: () => new Date(clock),
      webhooks: { deliver: true, allowedHosts: [endpoint.host], pollMs: 100 },
    });
    const alice = t.as(await t.createPrincipal("Alice"));
    const { secret: old, webhook } = await createWebhook(alice, endpoint.url, ["WORKSPACE_ARCHIVED"]);
    const rotated = expectType(
      (await alice.request(RotateWebhookSecretDocument, { input: { id: webhook.id } })).rotateWebhookSecret,
      "RotateWebhookSecretSuccess",
    );
    clock += 24 * 3_600_000 + 1_000;
    const workspace = await createWorkspace(alice);
    await alice.request(ArchiveWorkspaceDocument, { input: { workspaceId: workspace.id } });
    await vi.waitFor(() => expect(endpoint.received).toHaveLength(1), { timeout: 10_000 });
    const [request] = endpoint.received;
    expect(String(request!.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(endpoint.verify(request!, rotated.secret).type).toBe("WORKSPACE_ARCHIVED");
    expect(() => endpoint.verify(request!, old)).toThrow();
  });
});
