// One principal's identical workspaceEvents subscriptions cost the database what one does: the
// response to a workspace event is executed once per credential, document and variables, and
// every subscriber gets it. Without that, one socket holding many copies of a selection that reads
// a lot multiplied each goal update's statements by their number, and starved the database for all.
import { once } from "node:events";
import { afterEach, expect, it } from "vitest";
import { WebSocket } from "ws";
import { CreateApiKeyDocument, UpdateGoalDocument } from "../../sdk/generated/graphql.js";
import { openMigratedTestDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

let t: TestApp | undefined;
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.terminate();
  await t?.close();
  t = undefined;
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const SELECTION = Array.from({ length: 10 }, (_, i) => `w${i}: workspace { goalVersions(first: 50) { edges { node { statement } } } }`).join(" ");
const QUERY = `subscription($id: ID!) { workspaceEvents(workspaceId: $id) { kind goal { statement } ${SELECTION} } }`;
type Next = {
  id: string;
  payload: {
    data?: { workspaceEvents: { kind: string; goal?: { statement: string } | null; w0?: unknown; run?: { viewerOperations: string[] } | null } };
    errors?: unknown;
  };
};

/** A graphql-ws socket, acknowledged, with what it was sent so far. */
async function openSocket(url: string, authorization?: string) {
  const socket = new WebSocket(url, "graphql-transport-ws");
  sockets.push(socket);
  await once(socket, "open");
  const nexts: Next[] = [];
  const others: unknown[] = [];
  const acked = new Promise<void>((resolve) =>
    socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as { type: string } & Partial<Next>;
      if (message.type === "connection_ack") resolve();
      else if (message.type === "next") nexts.push(message as Next);
      else others.push(message);
    }),
  );
  socket.send(JSON.stringify({ type: "connection_init", payload: authorization ? { authorization } : {} }));
  await acked;
  /** Subscriptions `from` to `to` (their ids), each to `payload`. */
  const subscribe = (from: number, to: number, payload: { query: string; variables: Record<string, unknown> }) => {
    for (let i = from; i < to; i += 1) socket.send(JSON.stringify({ id: String(i), type: "subscribe", payload }));
  };
  return { nexts, others, subscribe };
}

it("a goal update reads the goal versions once for 50 identical subscriptions of one principal, and each of them hears it", async () => {
  // Statements that read or write goal versions: the worker's own passes run beside the test.
  let statements = 0;
  t = await startTestApp("pglite", {
    listen: true,
    database: () => openMigratedTestDatabase("pglite", { onQuery: (sql: string) => void (/goal_version/i.test(sql) && (statements += 1)) }),
  });
  const workspace = await createWorkspace(t.client);
  const { nexts, others, subscribe } = await openSocket(t.server!.wsUrl);
  const query = { query: QUERY, variables: { id: workspace.id } };
  /** The goal-version statements one update costs, once `count` subscribers have heard it. */
  const update = async (statement: string, expectedVersion: number, count: number) => {
    nexts.length = 0;
    const before = statements;
    await t!.client.request(UpdateGoalDocument, { input: { workspaceId: workspace.id, statement, expectedVersion } });
    for (let i = 0; i < 200 && nexts.length < count; i += 1) await sleep(25);
    await sleep(300);
    return statements - before;
  };

  subscribe(0, 1, query);
  await sleep(300);
  const alone = await update("The first goal", 1, 1);
  expect(nexts).toHaveLength(1);

  subscribe(1, 50, query);
  await sleep(500);
  const together = await update("The second goal", 2, 50);
  expect(others).toEqual([]);
  // Every subscriber hears the update once, with what its selection reads.
  expect(nexts.map((next) => next.id).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 50 }, (_, i) => String(i)));
  for (const next of nexts) {
    expect(next.payload.errors).toBeUndefined();
    expect(next.payload.data?.workspaceEvents).toMatchObject({ kind: "GOAL_UPDATED", goal: { statement: "The second goal" } });
    expect(next.payload.data?.workspaceEvents.w0).toMatchObject({
      goalVersions: { edges: expect.arrayContaining([{ node: { statement: "The second goal" } }]) },
    });
  }
  // Fifty subscribers cost exactly what one did: the update's own statements and one execution.
  expect(together).toBe(alone);
});

it("two API keys of one principal with different scopes never share a response: each key's subscribers read their own key's operations", async () => {
  t = await startTestApp("pglite", { authRequired: true, listen: true });
  const secret = await t.createPrincipal("Two keys");
  const client = t.as(secret);
  const workspace = await createWorkspace(client);
  const created = await client.request(CreateApiKeyDocument, { input: { name: "watcher", scopes: ["READ", "SUBSCRIBE"] } });
  const watcherSecret = expectType(created.createApiKey, "CreateApiKeySuccess").secret;
  const query = { query: "subscription($id: ID!) { workspaceEvents(workspaceId: $id) { kind run { viewerOperations } } }", variables: { id: workspace.id } };
  const full = await openSocket(t.server!.wsUrl, `Bearer ${secret}`);
  const watcher = await openSocket(t.server!.wsUrl, `Bearer ${watcherSecret}`);
  // Interleaved, so that whichever key's subscriber hears the event first, the other's still do.
  for (let i = 0; i < 10; i += 1) {
    full.subscribe(i, i + 1, query);
    watcher.subscribe(i, i + 1, query);
  }
  await sleep(500);
  const before = t.server!.sharedSubscriptionExecutions();
  await admit(client, { workspaceId: workspace.id, question: "What changed?" });
  const admitted = (socket: { nexts: Next[] }) => socket.nexts.filter((next) => next.payload.data?.workspaceEvents.kind === "RUN_ADMITTED");
  for (let i = 0; i < 200 && (admitted(full).length < 10 || admitted(watcher).length < 10); i += 1) await sleep(25);
  await sleep(300);
  expect([full.others, watcher.others]).toEqual([[], []]);
  expect(admitted(full).map((next) => next.payload.data?.workspaceEvents.run?.viewerOperations)).toEqual(
    Array.from({ length: 10 }, () => ["READ", "SUBSCRIBE", "ADMIT", "DECIDE", "CANCEL", "SCORE"]),
  );
  expect(admitted(watcher).map((next) => next.payload.data?.workspaceEvents.run?.viewerOperations)).toEqual(
    Array.from({ length: 10 }, () => ["READ", "SUBSCRIBE"]),
  );
  // Each event the keys heard was executed once per key, not once per subscriber.
  const events = full.nexts.length / 10;
  expect(watcher.nexts).toHaveLength(full.nexts.length);
  expect(t.server!.sharedSubscriptionExecutions() - before).toBe(2 * events);
});

it("keys of one principal with the same rights share a response; the same scopes with other run caps do not", async () => {
  t = await startTestApp("pglite", { authRequired: true, listen: true });
  const secret = await t.createPrincipal("Three keys");
  const client = t.as(secret);
  const workspace = await createWorkspace(client);
  const keyWith = async (name: string, runCaps?: { maxTurns: number }) =>
    expectType(
      (await client.request(CreateApiKeyDocument, { input: { name, scopes: ["READ", "SUBSCRIBE"], ...(runCaps && { runCaps }) } })).createApiKey,
      "CreateApiKeySuccess",
    ).secret;
  const [agent, page, capped] = [await keyWith("agent"), await keyWith("page"), await keyWith("capped", { maxTurns: 3 })];
  const query = { query: "subscription($id: ID!) { workspaceEvents(workspaceId: $id) { kind run { viewerOperations } } }", variables: { id: workspace.id } };
  const sockets = await Promise.all([agent, page, capped].map((key) => openSocket(t!.server!.wsUrl, `Bearer ${key}`)));
  for (const socket of sockets) socket.subscribe(1, 2, query);
  await sleep(500);
  const before = t.server!.sharedSubscriptionExecutions();
  await admit(client, { workspaceId: workspace.id, question: "What changed?" });
  const admitted = (socket: { nexts: Next[] }) => socket.nexts.filter((next) => next.payload.data?.workspaceEvents.kind === "RUN_ADMITTED");
  for (let i = 0; i < 200 && sockets.some((socket) => admitted(socket).length < 1); i += 1) await sleep(25);
  await sleep(300);
  expect(sockets.map((socket) => admitted(socket).map((next) => next.payload.data?.workspaceEvents.run?.viewerOperations))).toEqual(
    Array.from({ length: 3 }, () => [["READ", "SUBSCRIBE"]]),
  );
  // The agent's and the page's keys (the same scopes, no caps) are executed for once; the capped key on its own.
  const events = sockets[0]!.nexts.length;
  expect(t.server!.sharedSubscriptionExecutions() - before).toBe(2 * events);
});
