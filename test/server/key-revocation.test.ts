// Attack: a key that leaked is revoked while it still holds subscriptions open. Revoked through
// the API or by the operator's `npm run key:revoke` from another process, the key is refused at
// once over HTTP, and its open WebSocket (close 4403 "API key revoked") and SSE subscriptions end
// within 5 seconds, while the same principal's other key keeps working. A key revoked while a
// subscription was starting (authenticated before, watched after) ends it at once as well.
import { createClient as createWsClient } from "graphql-ws";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { ApiKeysDocument, CreateApiKeyDocument, RevokeApiKeyDocument, UpdateGoalDocument, ViewerDocument } from "../../sdk/generated/graphql.js";
import { openDatabase } from "../../src/db/open-database.js";
import { createEventBus } from "../../src/events/topics.js";
import type { PrismaClient } from "../../src/generated/prisma/client.js";
import { silentLogger } from "../../src/logger.js";
import { KeyRevocations } from "../../src/server/key-revocations.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { createWorkspace, expectType } from "../support/fixtures.js";
import { killAll, type Spawned, spawnTs } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitFor, waitUntil } from "../support/wait.js";

const SUBSCRIPTION = "subscription($id: ID!) { workspaceEvents(workspaceId: $id) { kind goal { version } } }";

/** A graphql-ws subscription with `key`: the events it got and how its socket closed. */
function openSocket(wsUrl: string, key: string, workspaceId: string) {
  const events: unknown[] = [];
  const state: { closed?: { code: number; reason: string; at: number }; completed: boolean } = { completed: false };
  const client = createWsClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: { headers: { Authorization: `Bearer ${key}` } },
    on: {
      closed: (event) => {
        const { code, reason } = event as { code: number; reason: string };
        state.closed ??= { code, reason, at: Date.now() };
      },
    },
  });
  client.subscribe(
    { query: SUBSCRIPTION, variables: { id: workspaceId } },
    { next: (value) => void events.push(value), error: () => undefined, complete: () => void (state.completed = true) },
  );
  return { events, state, dispose: () => client.dispose() };
}

/** A GraphQL-over-SSE subscription with `key`: the payloads it got and when its stream ended. */
function openSse(url: string, key: string, workspaceId: string) {
  const payloads: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] }[] = [];
  const state: { endedAt?: number } = {};
  const abort = new AbortController();
  void (async () => {
    const response = await fetch(url, {
      method: "POST",
      signal: abort.signal,
      headers: { "content-type": "application/json", accept: "text/event-stream", authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: SUBSCRIPTION, variables: { id: workspaceId } }),
    });
    const decoder = new TextDecoder();
    let buffered = "";
    const reader = response.body!.getReader();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      buffered += decoder.decode(chunk.value, { stream: true });
      for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
        const data = /^data: (.+)$/m.exec(buffered.slice(0, end))?.[1];
        buffered = buffered.slice(end + 2);
        if (data && data !== "") payloads.push(JSON.parse(data));
      }
    }
    state.endedAt = Date.now();
  })().catch(() => void (state.endedAt ??= Date.now()));
  return { payloads, state, dispose: () => abort.abort() };
}

describe.each(backends)("revoking an API key on %s", (backend) => {
  let t: TestApp | undefined;
  const cleanups: (() => unknown)[] = [];
  const processes: Spawned[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
    await killAll(processes);
    await t?.close();
    t = undefined;
  });

  /** Alice with two keys, a workspace, and a way to make it emit an event. */
  async function aliceWithTwoKeys(options: Parameters<typeof startTestApp>[1] = {}) {
    t = await startTestApp(backend, { listen: true, authRequired: true, ...options });
    const firstKey = await t.createPrincipal("Alice");
    const alice = t.as(firstKey);
    const created = expectType((await alice.request(CreateApiKeyDocument, { input: { name: "CI pipeline" } })).createApiKey, "CreateApiKeySuccess");
    const workspace = await createWorkspace(alice);
    let version = workspace.goal.version;
    const changeGoal = async () => {
      const updated = await alice.request(UpdateGoalDocument, {
        input: { workspaceId: workspace.id, expectedVersion: version, statement: `Goal ${version + 1}` },
      });
      version = expectType(updated.updateGoal, "UpdateGoalSuccess").goal.version;
      return version;
    };
    return { t, alice, firstKey, ciKey: created.secret, ciKeyId: created.apiKey.id, ciPrefix: created.apiKey.prefix, workspace, changeGoal };
  }

  const viewerStatus = async (url: string, key: string) =>
    (
      await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify({ query: "{ viewer { name } }" }),
      })
    ).status;

  it("lists your keys with their last use, and revoking one refuses it at once and ends its WebSocket and SSE subscriptions within 5 s", async () => {
    const { t, alice, firstKey, ciKey, ciKeyId, workspace, changeGoal } = await aliceWithTwoKeys();
    const before = (await alice.request(ApiKeysDocument, {})).apiKeys.edges.map((edge) => edge.node);
    expect(before.map((key) => [key.name, key.revokedAt, key.lastUsedAt !== null])).toEqual([
      ["CI pipeline", null, false],
      ["first key", null, true],
    ]);

    const ws = openSocket(t.server!.wsUrl, ciKey, workspace.id);
    const sse = openSse(t.server!.url, ciKey, workspace.id);
    const aliceWs = openSocket(t.server!.wsUrl, firstKey, workspace.id);
    cleanups.push(ws.dispose, sse.dispose, aliceWs.dispose);
    // Every subscription is live: each sees a goal change.
    await waitUntil(
      async () => {
        if (ws.events.length > 0 && sse.payloads.length > 0 && aliceWs.events.length > 0) return true;
        await changeGoal();
      },
      10_000,
      200,
    );
    const lastUsed = (await alice.request(ApiKeysDocument, {})).apiKeys.edges.find((edge) => edge.node.id === ciKeyId)!.node.lastUsedAt;
    expect(lastUsed).not.toBeNull();

    const revoked = expectType((await alice.request(RevokeApiKeyDocument, { input: { id: ciKeyId } })).revokeApiKey, "RevokeApiKeySuccess");
    const revokedAt = Date.now();
    expect(revoked.apiKey.revokedAt).not.toBeNull();
    expect(await viewerStatus(t.server!.url, ciKey)).toBe(401);

    await waitFor(() => ws.state.closed !== undefined && sse.state.endedAt !== undefined, 5_000);
    expect(ws.state.closed).toMatchObject({ code: 4403, reason: "API key revoked" });
    expect(ws.state.closed!.at - revokedAt).toBeLessThan(5_000);
    expect(sse.state.endedAt! - revokedAt).toBeLessThan(5_000);
    expect(sse.payloads.at(-1)?.errors).toEqual([
      expect.objectContaining({ message: "API key revoked", extensions: expect.objectContaining({ code: "UNAUTHENTICATED" }) }),
    ]);

    // The same principal's other key is untouched: its subscription still delivers.
    const seen = aliceWs.events.length;
    await changeGoal();
    await waitFor(() => aliceWs.events.length > seen, 5_000);
    expect(aliceWs.state.closed).toBeUndefined();
    expect(await viewerStatus(t.server!.url, firstKey)).toBe(200);
    // A new connection with the revoked key is refused like any unknown key.
    const again = openSocket(t.server!.wsUrl, ciKey, workspace.id);
    cleanups.push(again.dispose);
    await waitFor(() => again.state.closed !== undefined, 5_000);
    expect(again.state.closed!.code).toBe(4401);

    // Revoking twice changes nothing; another principal cannot revoke (or see) Alice's keys.
    const twice = expectType((await alice.request(RevokeApiKeyDocument, { input: { id: ciKeyId } })).revokeApiKey, "RevokeApiKeySuccess");
    expect(twice.apiKey.revokedAt).toBe(revoked.apiKey.revokedAt);
    const bob = t.as(await t.createPrincipal("Bob"));
    const firstKeyId = before[1]!.id;
    expect((await bob.request(RevokeApiKeyDocument, { input: { id: firstKeyId } })).revokeApiKey.__typename).toBe("NotFoundError");
    expect((await bob.request(ApiKeysDocument, {})).apiKeys.edges.map((edge) => edge.node.name)).toEqual(["first key"]);
    expect(await viewerStatus(t.server!.url, firstKey)).toBe(200);
  });

  it("lets a key revoke itself: the answer arrives, then the key is refused", async () => {
    const { t, ciKey, ciKeyId } = await aliceWithTwoKeys();
    const self = t.as(ciKey);
    const revoked = expectType((await self.request(RevokeApiKeyDocument, { input: { id: ciKeyId } })).revokeApiKey, "RevokeApiKeySuccess");
    expect(revoked.apiKey.revokedAt).not.toBeNull();
    await expect(self.request(ViewerDocument, {})).rejects.toThrow(/Invalid API key/);
  });

  it.runIf(backend === "postgres")(
    "npm run key:revoke -- <prefix>, run by the operator in another process, ends the running server's subscriptions within 5 s",
    async () => {
      const database = await createPostgresDatabase();
      cleanups.push(database.drop);
      const { t, ciKey, ciPrefix, firstKey, workspace, changeGoal } = await aliceWithTwoKeys({
        database: async () => {
          const db = await openDatabase({ kind: "postgres", url: database.url });
          return { db, dispose: () => db.close() };
        },
      });
      const ws = openSocket(t.server!.wsUrl, ciKey, workspace.id);
      const sse = openSse(t.server!.url, ciKey, workspace.id);
      cleanups.push(ws.dispose, sse.dispose);
      await waitUntil(
        async () => {
          if (ws.events.length > 0 && sse.payloads.length > 0) return true;
          await changeGoal();
        },
        10_000,
        200,
      );

      const tooShort = spawnTs("scripts/revoke-key.ts", { env: { DATABASE_URL: database.url }, args: ["dsk_"] });
      processes.push(tooShort);
      expect((await tooShort.exited).code).toBe(1);
      expect(tooShort.output()).toContain("must be at least 8 characters");
      const unknown = spawnTs("scripts/revoke-key.ts", { env: { DATABASE_URL: database.url }, args: ["dsk_00000000"] });
      processes.push(unknown);
      expect((await unknown.exited).code).toBe(1);
      expect(unknown.output()).toContain("No API key starts with dsk_00000000");
      expect(ws.state.closed).toBeUndefined();

      const revoke = spawnTs("scripts/revoke-key.ts", { env: { DATABASE_URL: database.url }, args: [ciPrefix] });
      processes.push(revoke);
      expect((await revoke.exited).code).toBe(0);
      const revokedAt = Date.now();
      expect(revoke.output()).toContain(`Key "CI pipeline" (${ciPrefix}…) of principal "Alice" is revoked`);
      expect(await viewerStatus(t.server!.url, ciKey)).toBe(401);
      await waitFor(() => ws.state.closed !== undefined && sse.state.endedAt !== undefined, 5_000);
      expect(ws.state.closed).toMatchObject({ code: 4403, reason: "API key revoked" });
      expect(Math.max(ws.state.closed!.at, sse.state.endedAt!) - revokedAt).toBeLessThan(5_000);
      expect(await viewerStatus(t.server!.url, firstKey)).toBe(200);
    },
  );
});

describe("a key revoked while a subscription starts", () => {
  it("ends the subscription at once when its watch comes after the revocation, without waiting for the sweep", async () => {
    const events = createEventBus();
    // The sweep would catch it within the hour only: the revocation itself must.
    const revocations = new KeyRevocations({ prisma: {} as PrismaClient, events, logger: silentLogger, sweepMs: 3_600_000 });
    /** Revokes a key on the bus and waits until the revocations have heard of it. */
    const revoke = async (keyId: string) => {
      const heard = revocations.revoked(keyId);
      events.publish("apikey:revoked", { keyId, at: new Date().toISOString() });
      await heard.promise;
    };
    try {
      // Authenticated with key A, then A is revoked, then the socket (graphql-ws) and the stream (SSE) are watched.
      await revoke("key-a");
      const ended = { socket: 0, stream: 0, otherKey: 0 };
      revocations.watch("key-a", () => (ended.socket += 1));
      void revocations.revoked("key-a").promise.then(() => (ended.stream += 1));
      revocations.watch("key-c", () => (ended.otherKey += 1));
      await revoke("key-d");
      expect(ended).toEqual({ socket: 1, stream: 1, otherKey: 0 });
    } finally {
      await revocations.close();
    }
  });
});
