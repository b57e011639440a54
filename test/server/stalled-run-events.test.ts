import type { Socket } from "node:net";
import { afterEach, expect, it } from "vitest";
import type { WebSocket } from "ws";
import { decodeGlobalId } from "../../src/domain/global-id.js";
import { createEventBus, publishRunStatus } from "../../src/events/topics.js";
import { admit } from "../support/fixtures.js";
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

const CHANGES = 1_500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const subscription = (selection: string) => `subscription($id: ID!) { runEvents(runId: $id) { ${selection} } }`;
// Large answers: the stalled client's kernel buffers fill after a few, then the server's sends wait.
const LARGE = `status stop run { ${Array.from({ length: 30 }, (_, i) => `q${i}: question`).join(" ")} }`;

type Message = { type: string; payload?: { data?: { runEvents?: { status: string; stop: string | null } } } };

const subscribeWs = (wsUrl: string, query: string, variables: Record<string, unknown>) => subscribeRawWs<Message>(sockets, wsUrl, query, variables);

const statuses = (received: Message[]) => received.filter((m) => m.type === "next").map((m) => m.payload?.data?.runEvents?.status);

it("a graphql-ws client that stops reading its runEvents: the server keeps serving; it goes on from the run's status", async () => {
  const events = createEventBus();
  t = await startTestApp("pglite", { listen: true, events });
  const { run } = await admit(t.client, { question: `${"q".repeat(19_000)}` });
  const runId = decodeGlobalId(run.id)!.id;
  const reader = await subscribeWs(t.server!.wsUrl, subscription("status stop"), { id: run.id });
  const stalled = await subscribeWs(t.server!.wsUrl, subscription(LARGE), { id: run.id });
  await waitUntil(() => (statuses(stalled.received).length === 1 && statuses(reader.received).length === 1 ? true : undefined), 5_000);
  const raw = (stalled.socket as unknown as { _socket: Socket })._socket;
  raw.pause();
  const uncaught = await countUncaughtWhile(async () => {
    for (let i = 0; i < CHANGES; i += 1) {
      // A stop request is news each time, though the status stays QUEUED.
      publishRunStatus(events, runId, "QUEUED", "AFTER_TURN");
      if (i % 20 === 19) await sleep(20);
    }
    await waitUntil(() => (statuses(reader.received).length === CHANGES + 1 ? true : undefined), 20_000);
  });
  expect(uncaught).toEqual([]);
  raw.resume();
  await sleep(500);
  publishRunStatus(events, runId, "RUNNING");
  await waitUntil(() => (statuses(stalled.received).at(-1) === "RUNNING" ? true : undefined), 20_000);
  expect(statuses(stalled.received).length).toBeLessThan(CHANGES + 2);
  expect(statuses(reader.received).at(-1)).toBe("RUNNING");
  // Still listening: the run's next change reaches it.
  publishRunStatus(events, runId, "SUCCEEDED");
  await waitUntil(() => (stalled.received.at(-1)?.type === "complete" ? true : undefined), 20_000);
  expect(statuses(stalled.received).at(-1)).toBe("SUCCEEDED");
});
