// The response byte budget (MAX_RESPONSE_BYTES) of a subscription holds for each event it is sent,
// and for that subscription alone: one workspace event reaches every subscriber of the workspace
// as one object, yet what one subscriber's response to it spends leaves another's budget whole.
import { once } from "node:events";
import { afterAll, beforeAll, expect, it } from "vitest";
import { WebSocket } from "ws";
import { CreateApiKeyDocument } from "../../sdk/generated/graphql.js";
import type { Prisma } from "../../src/generated/prisma/client.js";
import { appendMessage } from "../../src/domain/research/conversation-service.js";
import { idOfType } from "../../src/domain/global-id.js";
import { DEFAULT_QUERY_LIMITS } from "../../src/server/hardening.js";
import { admit, createWorkspace, expectType, startConversation } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const MAX_RESPONSE_BYTES = 1_000;
const TEXT = "x".repeat(600);
const QUERY = `subscription($id: ID!) { workspaceEvents(workspaceId: $id) {
  kind run { conversation { messages(first: 5) { edges { node { content } } } } } } }`;

type Next = { payload: { data?: { workspaceEvents: { kind: string; run: unknown } }; errors?: { extensions?: { code?: string } }[] } };

let t: TestApp;
const sockets: WebSocket[] = [];
beforeAll(async () => {
  t = await startTestApp("pglite", { authRequired: true, listen: true, limits: { ...DEFAULT_QUERY_LIMITS, maxResponseBytes: MAX_RESPONSE_BYTES } });
});
afterAll(async () => {
  for (const socket of sockets) socket.terminate();
  await t?.close();
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A graphql-ws socket of `secret`, subscribed to `payload`, with what it was sent. */
async function subscribed(secret: string, payload: { query: string; variables: Record<string, unknown> }) {
  const socket = new WebSocket(t.server!.wsUrl, "graphql-transport-ws");
  sockets.push(socket);
  await once(socket, "open");
  const nexts: Next[] = [];
  const acked = new Promise<void>((resolve) =>
    socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as { type: string } & Next;
      if (message.type === "connection_ack") resolve();
      else if (message.type === "next") nexts.push(message);
    }),
  );
  socket.send(JSON.stringify({ type: "connection_init", payload: { authorization: `Bearer ${secret}` } }));
  await acked;
  socket.send(JSON.stringify({ id: "1", type: "subscribe", payload }));
  return nexts;
}

it("two subscribers of one workspace, each with its own credential, are each sent a text that fits the budget once", async () => {
  const secret = await t.createPrincipal("Two watchers");
  const client = t.as(secret);
  const workspace = await createWorkspace(client);
  const conversation = await startConversation(client);
  const conversationId = idOfType(conversation.id, "Conversation")!;
  await appendMessage(t.app.db.prisma as unknown as Prisma.TransactionClient, { conversationId, role: "USER", content: TEXT });
  const created = await client.request(CreateApiKeyDocument, { input: { name: "watcher", scopes: ["READ", "SUBSCRIBE"] } });
  const watcher = expectType(created.createApiKey, "CreateApiKeySuccess").secret;
  const payload = { query: QUERY, variables: { id: workspace.id } };
  const heard = [await subscribed(secret, payload), await subscribed(watcher, payload)];
  await sleep(300);

  await admit(client, { workspaceId: workspace.id, conversationId: conversation.id, question: "And now?" });
  const admitted = (nexts: Next[]) => nexts.filter((next) => next.payload.data?.workspaceEvents.kind === "RUN_ADMITTED");
  for (let i = 0; i < 200 && heard.some((nexts) => admitted(nexts).length < 1); i += 1) await sleep(25);
  const answers = heard.map((nexts) => admitted(nexts).map((next) => [next.payload.errors?.map((error) => error.extensions?.code), next.payload.data]));
  const run = { conversation: { messages: { edges: [{ node: { content: TEXT } }] } } };
  expect(answers).toEqual(Array.from({ length: 2 }, () => [[undefined, { workspaceEvents: { kind: "RUN_ADMITTED", run } }]]));
});
