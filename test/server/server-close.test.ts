// Closing the HTTP server (a deploy's SIGTERM) while clients hold event streams open: an SSE
// subscription's connection is cut (never a `complete`: its subscriber resumes, as
// trusted-documents.test.ts's restart shows), a graphql-ws one has its socket closed with 1001
// (going away), and a connection that never sent a request is closed, all at once.
// close() waits for none of them until the 5 s it gives requests in flight to finish.
import { once } from "node:events";
import { connect } from "node:net";
import { createClient as createWsClient } from "graphql-ws";
import { afterEach, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const EVENTS = "subscription($w: ID!) { workspaceEvents(workspaceId: $w) { __typename } }";

async function createWorkspace(app: TestApp): Promise<string> {
  const response = await app.app.yoga.fetch(
    new Request("http://127.0.0.1/graphql", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: 'mutation { createWorkspace(input: { title: "t", goal: "g" }) { ... on CreateWorkspaceSuccess { workspace { id } } } }' }),
    }),
  );
  return ((await response.json()) as { data: { createWorkspace: { workspace: { id: string } } } }).data.createWorkspace.workspace.id;
}

it("cuts an open SSE stream without a complete, closes a graphql-ws socket with 1001 and an unused connection, well before the grace period", async () => {
  t = await startTestApp("pglite", { listen: true });
  const server = t.server!;
  const workspace = await createWorkspace(t);
  const listening = t.listeners();

  const stream = await fetch(`${server.url}?query=${encodeURIComponent(EVENTS)}&variables=${encodeURIComponent(JSON.stringify({ w: workspace }))}`, {
    headers: { accept: "text/event-stream" },
  });
  expect(stream.status).toBe(200);
  // Read from the start, so the cut is the body's outcome, never an unheard rejection.
  const body = stream.text().then(
    (text) => `ended: ${text}`,
    (error: Error) => `cut: ${error.message}`,
  );
  let closed: { code: number; reason: string } | undefined;
  const client = createWsClient({
    url: server.wsUrl,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    on: { closed: (event) => void (closed = { code: (event as CloseEvent).code, reason: (event as CloseEvent).reason }) },
  });
  client.subscribe({ query: EVENTS, variables: { w: workspace } }, { next: () => undefined, error: () => undefined, complete: () => undefined });
  await vi.waitFor(() => expect(t!.listeners()).toBe(listening + 2));
  // A connection a client opened and has sent nothing on yet (a spare one it keeps ready).
  const spare = connect(server.port, "127.0.0.1");
  await once(spare, "connect");
  const spareClosed = once(spare, "close");

  const started = performance.now();
  await server.close();
  const ms = performance.now() - started;

  // Requests in flight may take 5 s; nothing here is one.
  expect(ms).toBeLessThan(1_000);
  // The stream's response never ends as a finished one would: a subscriber reads a lost connection.
  expect(await body).toBe("cut: terminated");
  expect(closed).toMatchObject({ code: 1001 });
  await spareClosed;
  expect(t.listeners()).toBe(listening);
  await client.dispose();
});
