// An access token's subscriptions end when it does, and nothing reaches its holder after that by any
// path: an event published after the instant while the process is busy (its timers not yet run),
// an event after the server's clock passed the instant, an operation sent on the socket in that
// window (4401 "token expired", not an internal error a client would retry), a keepalive ping
// then, the same over SSE.
// A socket whose key was revoked in the database, before the sweep saw it, closes with 4403 when
// it starts another operation. A subscription the client stops frees its source at once, not when
// the token expires.
import { createClient as createWsClient } from "graphql-ws";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { decodeGlobalId } from "../../src/domain/global-id.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

type Closed = { code: number; reason: string };
const EVENTS = "subscription($w: ID!) { workspaceEvents(workspaceId: $w) { kind checkpointRevision } }";

describe("a token's end on open subscriptions", () => {
  let t: TestApp | undefined;
  /** How far the server's clock is ahead of the system clock. */
  let ahead = 0;
  afterEach(async () => {
    await t?.close();
    t = undefined;
    ahead = 0;
  });

  const gql = async (bearer: string, query: string, variables: Record<string, unknown> = {}) =>
    (await (
      await t!.app.yoga.fetch(
        new Request("http://127.0.0.1/graphql", {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${bearer}` },
          body: JSON.stringify({ query, variables }),
        }),
      )
    ).json()) as { data: Record<string, any> };

  async function setUp(expiresInSeconds: number) {
    t = await startTestApp("pglite", { listen: true, authRequired: true, now: () => new Date(Date.now() + ahead) });
    const key = await t.createPrincipal("Team backend");
    const workspace = (await gql(key, `mutation { createWorkspace(input: { title: "W", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }`))
      .data.createWorkspace.workspace.id as string;
    const minted = (
      await gql(key, `mutation($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { ... on CreateAccessTokenSuccess { token expiresAt } } }`, {
        input: { grants: [{ resourceId: workspace, operations: ["READ", "SUBSCRIBE"] }], expiresInSeconds },
      })
    ).data.createAccessToken as { token: string; expiresAt: string };
    /** Publishes a workspace event whose checkpoint revision tells it apart, synchronously. */
    const publish = (revision: number) =>
      t!.app.events.publish("workspace:event", decodeGlobalId(workspace)!.id, {
        kind: "CHECKPOINT_UPDATED",
        workspaceId: decodeGlobalId(workspace)!.id,
        checkpointRevision: revision,
        goalVersion: null,
        link: null,
        runId: null,
        at: new Date().toISOString(),
      });
    return { key, workspace, token: minted.token, expiresAt: new Date(minted.expiresAt).getTime(), publish };
  }

  /** A graphql-ws client with the credential; the revisions each subscription received, and how the socket closed. */
  function socket(bearer: string, { keepAlive = 0 } = {}) {
    let closed!: (event: Closed) => void;
    let connected!: () => void;
    const close = new Promise<Closed>((resolve) => (closed = resolve));
    let closedWith: Closed | undefined;
    const open = new Promise<void>((resolve) => (connected = resolve));
    const client = createWsClient({
      url: t!.server!.wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: false,
      keepAlive,
      onNonLazyError: () => undefined,
      connectionParams: { headers: { authorization: `Bearer ${bearer}` } },
      on: {
        connected: () => connected(),
        closed: (event) => {
          const { code, reason } = event as Closed;
          closed((closedWith = { code, reason }));
        },
      },
    });
    const watch = (workspace: string) => {
      const revisions: number[] = [];
      const stop = client.subscribe<{ workspaceEvents: { checkpointRevision: number } }>(
        { query: EVENTS, variables: { w: workspace } },
        { next: (result) => void revisions.push(result.data!.workspaceEvents.checkpointRevision), error: () => undefined, complete: () => undefined },
      );
      return { revisions, stop };
    };
    return {
      client,
      open,
      close,
      watch,
      get closedWith() {
        return closedWith;
      },
    };
  }

  /** Holds the process (server and client alike) until the system clock has passed `instant`. */
  const busyUntil = (instant: number) => {
    while (Date.now() <= instant) {
      // a busy server: no timer runs meanwhile
    }
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

  it("delivers no event published after the token expired while the process was too busy to run its timers", async () => {
    const { workspace, token, expiresAt, publish } = await setUp(4);
    const listening = t!.listeners();
    const ws = socket(token);
    const watched = ws.watch(workspace);
    await vi.waitFor(() => expect(t!.listeners()).toBe(listening + 1));
    publish(1);
    await vi.waitFor(() => expect(watched.revisions).toEqual([1]));
    await sleep(expiresAt - Date.now() - 100);
    busyUntil(expiresAt + 20);
    publish(2);
    expect(await ws.close).toEqual({ code: 4401, reason: "token expired" });
    expect(watched.revisions).toEqual([1]);
    await ws.client.dispose();
  });

  it("ends an SSE stream with TOKEN_EXPIRED before an event published after the instant, however late the timer", async () => {
    const { workspace, token, expiresAt, publish } = await setUp(4);
    const listening = t!.listeners();
    const response = await fetch(`${t!.server!.url}?query=${encodeURIComponent(EVENTS)}&variables=${encodeURIComponent(JSON.stringify({ w: workspace }))}`, {
      headers: { accept: "text/event-stream", authorization: `Bearer ${token}` },
    });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    const readUntil = async (part: string) => {
      while (!text.includes(part)) {
        const chunk = await reader.read();
        if (chunk.done) return;
        text += chunk.value;
      }
    };
    await vi.waitFor(() => expect(t!.listeners()).toBe(listening + 1));
    publish(1);
    await readUntil('"checkpointRevision":1');
    await sleep(expiresAt - Date.now() - 100);
    busyUntil(expiresAt + 20);
    publish(2);
    await readUntil("event: complete");
    const revisions = [...text.matchAll(/"checkpointRevision":(\d+)/g)].map((match) => Number(match[1]));
    expect(revisions).toEqual([1]);
    expect(text).toContain('"code":"TOKEN_EXPIRED"');
  });

  it("closes with 4401 and delivers nothing once the server's clock passed the instant, whether an event or a new operation comes first", async () => {
    const { workspace, token, publish } = await setUp(60);
    const listening = t!.listeners();
    const first = socket(token);
    const watched = first.watch(workspace);
    const second = socket(token);
    // A socket that only pings.
    const idle = socket(token, { keepAlive: 50 });
    await Promise.all([second.open, idle.open]);
    await vi.waitFor(() => expect(t!.listeners()).toBe(listening + 1));
    publish(1);
    await vi.waitFor(() => expect(watched.revisions).toEqual([1]));

    ahead = 61_000;
    publish(2);
    await vi.waitFor(
      () => expect({ revisions: watched.revisions, closed: first.closedWith }).toEqual({ revisions: [1], closed: { code: 4401, reason: "token expired" } }),
      {
        timeout: 5_000,
      },
    );
    // An operation sent in the last moment gets the documented close, which clients do not retry.
    const late = second.watch(workspace);
    expect(await second.close).toEqual({ code: 4401, reason: "token expired" });
    expect(late.revisions).toEqual([]);
    // A keepalive ping after the instant closes the socket too.
    await vi.waitFor(() => expect(idle.closedWith).toEqual({ code: 4401, reason: "token expired" }), { timeout: 5_000 });
    await Promise.all([first.client.dispose(), second.client.dispose(), idle.client.dispose()]);
  });

  it("closes with 4403 a socket whose key was revoked before the sweep saw it, when it starts another operation", async () => {
    const { key, workspace, token } = await setUp(60);
    const listening = t!.listeners();
    const [byKey, byToken] = [socket(key), socket(token)];
    byKey.watch(workspace);
    byToken.watch(workspace);
    await vi.waitFor(() => expect(t!.listeners()).toBe(listening + 2));
    // Revoked behind the server's back (no event on the bus), as another tool might.
    await t!.app.db.prisma.apiKey.updateMany({ data: { revokedAt: new Date() } });
    byKey.watch(workspace);
    byToken.watch(workspace);
    expect(await byKey.close).toEqual({ code: 4403, reason: "API key revoked" });
    expect(await byToken.close).toEqual({ code: 4403, reason: "API key revoked" });
    await Promise.all([byKey.client.dispose(), byToken.client.dispose()]);
  });

  it("frees a subscription's source as soon as the client stops it, long before the token expires", async () => {
    const { workspace, token } = await setUp(600);
    const listening = t!.listeners();
    const ws = socket(token);
    const watched = ws.watch(workspace);
    await vi.waitFor(() => expect(t!.listeners()).toBe(listening + 1));
    watched.stop();
    await vi.waitFor(() => expect(t!.listeners()).toBe(listening), { timeout: 3_000 });
    await ws.client.dispose();
  });
});
