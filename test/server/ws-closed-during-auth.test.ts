// A graphql-ws client that leaves while its credential is being checked: nothing is kept for its
// socket once the check answers (it was counted among the open sockets for as long as the server
// ran). Checking is made slow on purpose: the failed-authentication buckets answer after 200 ms.
import { once } from "node:events";
import { afterEach, expect, it } from "vitest";
import { WebSocket } from "ws";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const CHECK_MS = 200;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const slowAuthFailures = {
  peek: async () => {
    await sleep(CHECK_MS);
    return { tokens: 1_000, retryAfterSeconds: 0 };
  },
  take: async () => ({ allowed: true as const }),
};

/** Opens a socket and sends connection_init with `key`; `leave` closes it at once, before the answer. */
async function open(wsUrl: string, key: string, leave: boolean): Promise<WebSocket> {
  const socket = new WebSocket(wsUrl, "graphql-transport-ws");
  await once(socket, "open");
  socket.send(JSON.stringify({ type: "connection_init", payload: { Authorization: `Bearer ${key}` } }));
  if (leave) {
    socket.close(1000);
    await once(socket, "close");
  } else {
    const [data] = (await once(socket, "message")) as [Buffer];
    expect(JSON.parse(String(data))).toEqual({ type: "connection_ack" });
  }
  return socket;
}

it("sockets closed while their credential is checked are not kept; one that stays is", async () => {
  t = await startTestApp("pglite", { listen: true, authRequired: true, authFailures: slowAuthFailures });
  const key = await t.createPrincipal("visitor");
  const server = t.server!;
  const staying = await open(server.wsUrl, key, false);
  expect(server.openSockets()).toBe(1);
  await Promise.all(Array.from({ length: 40 }, () => open(server.wsUrl, key, true)));
  // Every check has answered by now.
  await sleep(CHECK_MS * 3);
  expect(server.openSockets()).toBe(1);
  staying.close(1000);
  await waitUntil(() => (server.openSockets() === 0 ? true : undefined), 5_000);
  expect(server.openSockets()).toBe(0);
});
