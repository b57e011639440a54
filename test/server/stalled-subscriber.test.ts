// A client that stops reading its workspaceEvents while its workspace keeps changing: the server
// keeps serving (no uncaught exception, which would end the process and every principal's streams),
// another subscriber of the same workspace gets every event, and once the stalled client reads
// again its stream ends with RESYNC_REQUIRED and completes.
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterEach, expect, it } from "vitest";
import type { WebSocket } from "ws";
import { decodeGlobalId } from "../../src/domain/global-id.js";
import { createEventBus, type EventBus } from "../../src/events/topics.js";
import { createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { countUncaughtWhile } from "../support/uncaught.js";
import { waitUntil } from "../support/wait.js";
import { subscribeRawWs } from "../support/raw-ws-subscription.js";

let t: TestApp | undefined;
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  await t?.close();
  t = undefined;
});

const EVENTS = 1_500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// Large answers: the stalled client's kernel buffers fill after a few, then the server's sends wait.
const LARGE = `kind ${Array.from({ length: 30 }, (_, i) => `g${i}: goal { statement }`).join(" ")}`;
const subscription = (selection: string) => `subscription($id: ID!) { workspaceEvents(workspaceId: $id) { ${selection} } }`;

type Message = { type: string; payload?: { data?: { workspaceEvents?: { kind: string } } } };

const subscribeWs = (wsUrl: string, query: string, variables: Record<string, unknown>) => subscribeRawWs<Message>(sockets, wsUrl, query, variables);

async function publishPaced(events: EventBus, workspaceId: string) {
  for (let i = 0; i < EVENTS; i += 1) {
    events.publish("workspace:event", workspaceId, {
      kind: "GOAL_UPDATED",
      workspaceId,
      goalVersion: 1,
      link: null,
      runId: null,
      at: new Date().toISOString(),
    });
    // Never a burst: 20 events, then the server has 20 ms to take them.
    if (i % 20 === 19) await sleep(20);
  }
}

async function withWorkspace() {
  const events = createEventBus();
  t = await startTestApp("pglite", { listen: true, events });
  const workspace = await createWorkspace(t.client, "g".repeat(19_000));
  const reader = await subscribeWs(t.server!.wsUrl, subscription("kind"), { id: workspace.id });
  return { events, workspace, id: decodeGlobalId(workspace.id)!.id, reader };
}

const kinds = (received: Message[]) => received.filter((m) => m.type === "next").map((m) => m.payload?.data?.workspaceEvents?.kind);

it("a graphql-ws client that stops reading: the server keeps serving; its stream ends with RESYNC_REQUIRED", async () => {
  const { events, workspace, id, reader } = await withWorkspace();
  const stalled = await subscribeWs(t!.server!.wsUrl, subscription(LARGE), { id: workspace.id });
  await sleep(300);
  const raw = (stalled.socket as unknown as { _socket: Socket })._socket;
  raw.pause();
  const uncaught = await countUncaughtWhile(async () => {
    await publishPaced(events, id);
    await waitUntil(() => (kinds(reader.received).length === EVENTS ? true : undefined), 20_000);
  });
  expect(uncaught).toEqual([]);
  expect(kinds(reader.received)).toEqual(Array(EVENTS).fill("GOAL_UPDATED"));
  // Reading again, it gets what was on its way, then RESYNC_REQUIRED, then the end of its stream.
  raw.resume();
  await waitUntil(() => (stalled.received.some((m) => m.type === "complete") ? true : undefined), 20_000);
  const got = kinds(stalled.received);
  expect(got.length).toBeLessThan(EVENTS);
  expect(got.at(-1)).toBe("RESYNC_REQUIRED");
  expect(got.slice(0, -1).every((kind) => kind === "GOAL_UPDATED")).toBe(true);
  expect(stalled.received.at(-1)).toEqual({ id: "1", type: "complete" });
});

it("an SSE client that stops reading: the server keeps serving; its stream ends with RESYNC_REQUIRED", async () => {
  const { events, workspace, id, reader } = await withWorkspace();
  const path = `/graphql?query=${encodeURIComponent(subscription(LARGE))}&variables=${encodeURIComponent(JSON.stringify({ id: workspace.id }))}`;
  const raw = connect(t!.server!.port, "127.0.0.1");
  await once(raw, "connect");
  let body = "";
  raw.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
  raw.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${t!.server!.port}\r\nAccept: text/event-stream\r\n\r\n`);
  await waitUntil(() => (body.startsWith("HTTP/1.1 200") ? true : undefined), 5_000);
  await sleep(300);
  raw.pause();
  try {
    const uncaught = await countUncaughtWhile(async () => {
      await publishPaced(events, id);
      await waitUntil(() => (kinds(reader.received).length === EVENTS ? true : undefined), 20_000);
    });
    expect(uncaught).toEqual([]);
    expect(kinds(reader.received)).toEqual(Array(EVENTS).fill("GOAL_UPDATED"));
    raw.resume();
    await waitUntil(() => (body.includes("event: complete") ? true : undefined), 20_000);
    const sent = [...body.matchAll(/"kind":"(\w+)"/g)].map((match) => match[1]);
    expect(sent.length).toBeLessThan(EVENTS);
    expect(sent.at(-1)).toBe("RESYNC_REQUIRED");
  } finally {
    raw.destroy();
  }
});
