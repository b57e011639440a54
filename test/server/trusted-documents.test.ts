// Trusted documents (issue 22): the SDK sends documentIds instead of document texts over HTTP,
// SSE and graphql-ws; a server with TRUSTED_DOCUMENTS_ONLY=true runs those and refuses every
// other document (TRUSTED_DOCUMENT_REQUIRED, 400), an unknown id too (TRUSTED_DOCUMENT_NOT_FOUND);
// TRUSTED_DOCUMENTS_DIR adds a team's own manifests; GraphiQL is exempt only with GRAPHIQL=true.
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { parse, print } from "graphql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { createClient, type DossierClient, DossierRequestError, documentIdOf } from "../../sdk/client.js";
import {
  CreateWorkspaceDocument,
  UpdateGoalDocument,
  WorkspaceEventsDocument,
  WorkspacesDocument,
  type WorkspaceEventsSubscription,
} from "../../sdk/generated/graphql.js";
import { createApi } from "../../src/compose/api.js";
import { loadConfig } from "../../src/config.js";
import { silentLogger } from "../../src/logger.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { type RunningServer, startHttpServer } from "../../src/server/http-server.js";
import { createDemoModel } from "../../src/runtime/adapters/demo-model.js";
import { backends, createPostgresDatabase } from "../support/databases.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { connectMcp } from "../support/mcp-process.js";
import { killAll, type Spawned, spawnBuilt } from "../support/processes.js";
import { settled } from "../support/scripted-runs.js";
import { gateTool } from "../support/viewer-browser.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const backend = backends.includes("postgres") ? "postgres" : "pglite";
const ARBITRARY = "query Mine { viewer { id name } }";
const ARBITRARY_SUBSCRIPTION = "subscription MyEvents($workspaceId: ID!) { workspaceEvents(workspaceId: $workspaceId) { kind } }";
const SMUGGLED_MUTATION = 'mutation Smuggle { createWorkspace(input: { title: "Smuggled", goal: "g" }) { __typename } }';
const TEAM_DOCUMENT = "query TeamViewer {\n  viewer {\n    id\n    name\n  }\n}";
const traceIdOf = (runId: string) => Buffer.from(runId, "base64").toString("utf8").split(":")[1]!;
const typed = (text: string) => parse(text) as unknown as TypedDocumentNode<{ viewer: { id: string; name: string } }, Record<string, never>>;
const myEvents = parse(ARBITRARY_SUBSCRIPTION) as unknown as TypedDocumentNode<WorkspaceEventsSubscription, { workspaceId: string }>;

/** A POST to the GraphQL endpoint, answered as status, content type and JSON body. */
async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/graphql-response+json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, type: response.headers.get("content-type") ?? "", text, json: JSON.parse(text || "{}") as Record<string, any> };
}

/** How many requests /metrics counts as refused for `reason`. */
async function rejected(url: string, reason: string): Promise<number> {
  const metrics = await (await fetch(new URL("/metrics", url))).text();
  const line = metrics.split("\n").find((l) => l.startsWith(`dossier_graphql_rejected_total{reason="${reason}"} `));
  return Number(line?.split(" ")[1] ?? 0);
}

/** What a refused request or subscription said: its status and its errors' codes. */
async function refusal(attempt: Promise<unknown>) {
  const error = await attempt.then(
    () => expect.fail("expected a refusal"),
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(DossierRequestError);
  const { status, errors } = error as DossierRequestError;
  return { status, codes: errors.map((e) => e.extensions?.code) };
}

/** A WebSocket that keeps every message the client sends. */
function recordingSocket(sent: string[]) {
  return class extends WebSocket {
    override send(data: string) {
      sent.push(String(data));
      super.send(data);
    }
  };
}

/** The next workspace event after a goal change, over `client`'s subscription transport. */
async function goalChangeEvent(client: DossierClient, workspaceId: string, version: number, document = WorkspaceEventsDocument) {
  const events = client.subscribe(document, { workspaceId });
  const first = events.next();
  await new Promise((resolve) => setTimeout(resolve, 300));
  await client.request(UpdateGoalDocument, { input: { workspaceId, expectedVersion: version, statement: `Goal ${version + 1}` } });
  const event = (await first).value as WorkspaceEventsSubscription;
  await events.return?.();
  return event.workspaceEvents.kind;
}

describe("a server with TRUSTED_DOCUMENTS_ONLY=true", () => {
  let t: TestApp;
  let url: string;
  let wsUrl: string;
  const clients: DossierClient[] = [];
  const client = (options: Partial<Parameters<typeof createClient>[0]> = {}) => {
    const created = createClient({ url, wsUrl, ...options });
    clients.push(created);
    return created;
  };

  beforeAll(async () => {
    // The team's manifest comes from a folder, as TRUSTED_DOCUMENTS_DIR loads it.
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-trusted-"));
    writeFileSync(
      path.join(dir, "team.json"),
      JSON.stringify({ [await documentIdOf(TEAM_DOCUMENT)]: TEAM_DOCUMENT, "x-team:viewer-name": "{ viewer { name } }" }),
    );
    writeFileSync(path.join(dir, "notes.txt"), "not a manifest");
    const config = loadConfig({ TRUSTED_DOCUMENTS_ONLY: "true", TRUSTED_DOCUMENTS_DIR: dir });
    expect(config.graphiql).toBeUndefined();
    t = await startTestApp(backend, {
      listen: true,
      trustedDocuments: config.trustedDocuments,
      runtime: { model: createDemoModel(), sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-trusted-runs-")) },
    });
    url = t.server!.url;
    wsUrl = t.server!.wsUrl;
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await t?.close();
  });

  it("runs the SDK in trusted-documents mode: a query, a mutation, subscriptions over graphql-ws and SSE — sending ids, never texts", async () => {
    const bodies: string[] = [];
    const frames: string[] = [];
    const recordingFetch = (async (input: string, init?: RequestInit) => {
      bodies.push(String(init?.body));
      return fetch(input, init);
    }) as typeof fetch;
    const overWs = client({ trustedDocuments: true, fetch: recordingFetch, webSocketImpl: recordingSocket(frames) });
    const overSse = client({ trustedDocuments: true, fetch: recordingFetch, subscriptions: "sse" });

    const created = expectType(
      (await overWs.request(CreateWorkspaceDocument, { input: { title: "Trusted", goal: "Only known documents" } })).createWorkspace,
      "CreateWorkspaceSuccess",
    );
    const listed = await overSse.request(WorkspacesDocument, { first: 10 });
    expect(listed.workspaces.edges.map((edge) => edge.node.title)).toContain("Trusted");
    const workspaceId = created.workspace.id;
    expect(await goalChangeEvent(overWs, workspaceId, 1)).toBe("GOAL_UPDATED");
    expect(await goalChangeEvent(overSse, workspaceId, 2)).toBe("GOAL_UPDATED");

    // A run's trace read to its end through the resumable stream, over SSE.
    const { run } = await admit(overSse, { workspaceId, question: "What is trusted?" });
    await settled(overSse, run.id);
    const kinds: string[] = [];
    for await (const update of overSse.traceUpdates(run.id)) kinds.push(update.kind);
    expect(kinds.at(-1)).toBe("TRACE_ENDED");

    // What went over the wire: documentIds of the SDK's manifest, no document text.
    const sent = [...bodies.map((body) => JSON.parse(body)), ...frames.map((frame) => JSON.parse(frame).payload).filter(Boolean)];
    const operations = sent.filter((payload) => "documentId" in payload);
    expect(operations.length).toBeGreaterThanOrEqual(8);
    expect(operations.every((payload) => /^sha256:[0-9a-f]{64}$/.test(payload.documentId) && !payload.query)).toBe(true);
    const subscriptionId = await documentIdOf(print(WorkspaceEventsDocument));
    expect(frames.some((frame) => frame.includes(subscriptionId))).toBe(true);
  });

  it("refuses every other document over HTTP, SSE and graphql-ws with TRUSTED_DOCUMENT_REQUIRED, 400, and runs none of it", async () => {
    const plain = client();
    const overSse = client({ subscriptions: "sse" });
    const refused = { status: 400, codes: ["TRUSTED_DOCUMENT_REQUIRED"] };
    expect(await refusal(plain.request(typed(SMUGGLED_MUTATION)))).toEqual(refused);
    expect(await refusal(plain.request(typed(ARBITRARY)))).toEqual(refused);
    expect(await refusal(overSse.subscribe(myEvents, { workspaceId: "x" }).next())).toEqual(refused);
    // Over graphql-ws the operation's errors say it (there is no status; the SDK reports 400).
    expect(await refusal(plain.subscribe(myEvents, { workspaceId: "x" }).next())).toEqual(refused);

    // Raw requests: 400 with the typed error for application/graphql-response+json and SSE; a
    // client that accepts only application/json gets it with 200, as GraphQL over HTTP asks.
    const modern = await post(url, { query: ARBITRARY });
    expect([modern.status, modern.json.errors[0].extensions.code, modern.json.data]).toEqual([400, "TRUSTED_DOCUMENT_REQUIRED", undefined]);
    const sse = await post(url, { query: ARBITRARY_SUBSCRIPTION, variables: { workspaceId: "x" } }, { accept: "text/event-stream" });
    expect([sse.status, sse.type, sse.json.errors[0].extensions.code]).toEqual([400, "application/json; charset=utf-8", "TRUSTED_DOCUMENT_REQUIRED"]);
    const legacy = await post(url, { query: ARBITRARY }, { accept: "application/json" });
    expect([legacy.status, legacy.json.errors[0].extensions.code]).toEqual([200, "TRUSTED_DOCUMENT_REQUIRED"]);
    const get = await fetch(`${url}?query=${encodeURIComponent(ARBITRARY)}`, { headers: { accept: "application/graphql-response+json" } });
    expect(get.status).toBe(400);
    // Refused before it is parsed: a document that does not parse gets the same refusal.
    expect((await post(url, { query: "{ not a document" })).json.errors[0].extensions.code).toBe("TRUSTED_DOCUMENT_REQUIRED");

    const titles = (await client({ trustedDocuments: true }).request(WorkspacesDocument, { first: 50 })).workspaces.edges.map((edge) => edge.node.title);
    expect(titles).not.toContain("Smuggled");
    expect(await rejected(url, "TRUSTED_DOCUMENT_REQUIRED")).toBe(9);
  });

  it("runs the exact text of a trusted document (an SDK without trustedDocuments), and nothing that differs from it", async () => {
    const plain = client();
    const created = expectType(
      (await plain.request(CreateWorkspaceDocument, { input: { title: "Sent whole", goal: "g" } })).createWorkspace,
      "CreateWorkspaceSuccess",
    );
    expect(await goalChangeEvent(plain, created.workspace.id, 1)).toBe("GOAL_UPDATED");
    const changed = `${print(WorkspacesDocument)}\n`;
    expect((await post(url, { query: changed })).json.errors[0].extensions.code).toBe("TRUSTED_DOCUMENT_REQUIRED");
  });

  it("refuses a documentId it does not know, over HTTP, SSE and graphql-ws, with TRUSTED_DOCUMENT_NOT_FOUND", async () => {
    const unknown = typed("query NotInAnyManifest { viewer { id } }");
    const notFound = { status: 400, codes: ["TRUSTED_DOCUMENT_NOT_FOUND"] };
    expect(await refusal(client({ trustedDocuments: true }).request(unknown))).toEqual(notFound);
    expect(await refusal(client({ trustedDocuments: true, subscriptions: "sse" }).subscribe(unknown).next())).toEqual(notFound);
    expect(await refusal(client({ trustedDocuments: true }).subscribe(unknown).next())).toEqual(notFound);
    const raw = await post(url, { documentId: "sha256:0000000000000000000000000000000000000000000000000000000000000000" });
    expect([raw.status, raw.json.errors[0].message]).toEqual([
      400,
      'No trusted document has the documentId "sha256:0000000000000000000000000000000000000000000000000000000000000000".',
    ]);
    expect(await rejected(url, "TRUSTED_DOCUMENT_NOT_FOUND")).toBe(4);
  });

  it("runs a team's documents from TRUSTED_DOCUMENTS_DIR, by id or by their exact text", async () => {
    const team = client({ trustedDocuments: true });
    expect((await team.request(typed(TEAM_DOCUMENT))).viewer.name).toBe("Development principal");
    const byGet = await fetch(`${url}?documentId=${encodeURIComponent(await documentIdOf(TEAM_DOCUMENT))}`, {
      headers: { accept: "application/graphql-response+json" },
    });
    expect([byGet.status, await byGet.json()]).toEqual([200, { data: { viewer: { id: expect.any(String), name: "Development principal" } } }]);
    const custom = await post(url, { documentId: "x-team:viewer-name" });
    expect([custom.status, custom.json]).toEqual([200, { data: { viewer: { name: "Development principal" } } }]);
    // Sent whole, a trusted document is no other document; one character more and it is.
    expect((await client().request(typed(TEAM_DOCUMENT))).viewer.name).toBe("Development principal");
    expect((await post(url, { query: `${TEAM_DOCUMENT} ` })).status).toBe(400);
  });

  it("serves no GraphiQL, and GraphiQL's header earns nothing, without GRAPHIQL=true", async () => {
    const page = await fetch(url, { headers: { accept: "text/html" } });
    expect(await page.text()).not.toContain("GraphiQL");
    const marked = await post(url, { query: ARBITRARY }, { "x-dossier-graphiql": "1" });
    expect([marked.status, marked.json.errors[0].extensions.code]).toEqual([400, "TRUSTED_DOCUMENT_REQUIRED"]);
    const overWs = client({ headers: { "x-dossier-graphiql": "1" } });
    expect((await refusal(overWs.subscribe(myEvents, { workspaceId: "x" }).next())).codes).toEqual(["TRUSTED_DOCUMENT_REQUIRED"]);
  });
});

describe("a server with TRUSTED_DOCUMENTS_ONLY=true and GRAPHIQL=true", () => {
  let t: TestApp;
  const clients: DossierClient[] = [];
  beforeAll(async () => {
    const config = loadConfig({ TRUSTED_DOCUMENTS_ONLY: "true", GRAPHIQL: "true" });
    t = await startTestApp(backend, { listen: true, trustedDocuments: config.trustedDocuments, graphiql: config.graphiql });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await t?.close();
  });

  it("serves GraphiQL, whose page carries this process's secret, and runs any document that carries it — over HTTP and graphql-ws", async () => {
    const page = await (await fetch(t.server!.url, { headers: { accept: "text/html" } })).text();
    const secret = /"additionalHeaders":\{"x-dossier-graphiql":"([A-Za-z0-9_-]+)"\}/.exec(page)?.[1];
    expect(secret).toHaveLength(32);
    // The constant the page once sent is a header anyone can send: it earns nothing now.
    // One character off the secret (never the secret itself, whatever its last character).
    const offByOne = `${secret!.slice(0, -1)}${secret!.endsWith("x") ? "y" : "x"}`;
    for (const guess of ["1", "true", offByOne]) {
      const guessed = await post(t.server!.url, { query: ARBITRARY }, { "x-dossier-graphiql": guess });
      expect([guessed.status, guessed.json.errors[0].extensions.code]).toEqual([400, "TRUSTED_DOCUMENT_REQUIRED"]);
    }
    const guessedSocket = createClient({ url: t.server!.url, wsUrl: t.server!.wsUrl, headers: { "x-dossier-graphiql": "1" } });
    clients.push(guessedSocket);
    expect((await refusal(guessedSocket.subscribe(myEvents, { workspaceId: "x" }).next())).codes).toEqual(["TRUSTED_DOCUMENT_REQUIRED"]);

    const marked = await post(t.server!.url, { query: ARBITRARY }, { "x-dossier-graphiql": secret! });
    expect([marked.status, marked.json.data?.viewer?.name]).toEqual([200, "Development principal"]);
    const graphiqlSocket = createClient({ url: t.server!.url, wsUrl: t.server!.wsUrl, headers: { "x-dossier-graphiql": secret! } });
    clients.push(graphiqlSocket);
    const workspace = await createWorkspace(t.client);
    expect(await goalChangeEvent(graphiqlSocket, workspace.id, 1, myEvents)).toBe("GOAL_UPDATED");

    // Without the header, the door stays shut.
    const unmarked = await post(t.server!.url, { query: ARBITRARY });
    expect([unmarked.status, unmarked.json.errors[0].extensions.code]).toEqual([400, "TRUSTED_DOCUMENT_REQUIRED"]);
    const plainSocket = createClient({ url: t.server!.url, wsUrl: t.server!.wsUrl });
    clients.push(plainSocket);
    expect((await refusal(plainSocket.subscribe(myEvents, { workspaceId: workspace.id }).next())).codes).toEqual(["TRUSTED_DOCUMENT_REQUIRED"]);
  });
});

describe("a server by default (trusted documents off)", () => {
  let t: TestApp;
  const clients: DossierClient[] = [];
  beforeAll(async () => {
    const config = loadConfig({});
    expect(config.trustedDocuments).toEqual({ only: false, extra: {} });
    t = await startTestApp(backend, { listen: true, trustedDocuments: config.trustedDocuments, graphiql: config.graphiql });
  }, 60_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await t?.close();
  });

  it("runs any document as before, and the SDK's documentIds too, over HTTP, SSE and graphql-ws; GraphiQL is served", async () => {
    const arbitrary = await post(t.server!.url, { query: ARBITRARY }, { accept: "application/json" });
    expect([arbitrary.status, arbitrary.json.data.viewer.name]).toEqual([200, "Development principal"]);
    const workspace = await createWorkspace(t.client);
    for (const options of [{}, { trustedDocuments: true }, { subscriptions: "sse" as const }, { trustedDocuments: true, subscriptions: "sse" as const }]) {
      const c = createClient({ url: t.server!.url, wsUrl: t.server!.wsUrl, ...options });
      clients.push(c);
      const version = (await c.request(WorkspacesDocument, { first: 50 })).workspaces.edges.find((e) => e.node.id === workspace.id)!.node.goal.version;
      expect(await goalChangeEvent(c, workspace.id, version, options.trustedDocuments ? WorkspaceEventsDocument : myEvents)).toBe("GOAL_UPDATED");
    }
    // An unknown id is still refused: there is nothing to run.
    expect((await refusal(createClient({ url: t.server!.url, trustedDocuments: true }).request(typed("query Unlisted { viewer { id } }")))).codes).toEqual([
      "TRUSTED_DOCUMENT_NOT_FOUND",
    ]);
    expect(await (await fetch(t.server!.url, { headers: { accept: "text/html" } })).text()).toContain("GraphiQL");
  });

  it("serves no GraphiQL with GRAPHIQL=false", async () => {
    const api = createApi(t.app, { logger: silentLogger, authRequired: false, graphiql: loadConfig({ GRAPHIQL: "false" }).graphiql });
    try {
      const page = await api.yoga.fetch(new Request("http://dossier.test/graphql", { headers: { accept: "text/html" } }));
      expect(await page.text()).not.toContain("GraphiQL");
    } finally {
      await api.stop();
    }
  });
});

describe("the server process (npm start) with TRUSTED_DOCUMENTS_ONLY=true", () => {
  const running: Spawned[] = [];
  let drop: (() => Promise<void>) | undefined;
  afterAll(async () => {
    await killAll(running);
    await drop?.();
  });

  it("reads its settings from the environment, and the MCP server for other agents keeps working against it", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "dossier-trusted-process-"));
    writeFileSync(path.join(dir, "team.json"), JSON.stringify({ "x-team:viewer-name": "{ viewer { name } }" }));
    const database: Record<string, string> =
      backend === "postgres" ? { DATABASE_URL: await createPostgresDatabase().then((created) => ((drop = created.drop), created.url)) } : { DATA_DIR: dir };
    const server = spawnBuilt("src/main.ts", {
      env: { PORT: "0", AUTH_REQUIRED: "false", TRUSTED_DOCUMENTS_ONLY: "true", TRUSTED_DOCUMENTS_DIR: dir, ...database },
    });
    running.push(server);
    const url = JSON.parse(`{${await server.waitForOutput(/"url":"[^"]+"/, 60_000)}}`).url as string;
    expect(server.output()).toContain("TRUSTED_DOCUMENTS_ONLY=true: only the SDK's documents and 1 from TRUSTED_DOCUMENTS_DIR run");

    expect((await post(url, { query: ARBITRARY })).json.errors[0].extensions.code).toBe("TRUSTED_DOCUMENT_REQUIRED");
    expect((await post(url, { documentId: "x-team:viewer-name" })).json).toEqual({ data: { viewer: { name: "Development principal" } } });
    const sdk = createClient({ url, trustedDocuments: true });
    expectType((await sdk.request(CreateWorkspaceDocument, { input: { title: "Seen by the agent", goal: "g" } })).createWorkspace, "CreateWorkspaceSuccess");
    expect(await (await fetch(url, { headers: { accept: "text/html" } })).text()).not.toContain("GraphiQL");

    // The agent's requests pass through a proxy that keeps their bodies.
    const bodies: string[] = [];
    const proxy = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      bodies.push(Buffer.concat(chunks).toString("utf8"));
      const answer = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: String(request.headers.accept) },
        body: bodies.at(-1),
      });
      response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(await answer.text());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const agent = await connectMcp({ DOSSIER_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/graphql` });
    try {
      const listed = await agent.json("list_workspaces");
      expect(listed.workspaces.map((workspace: { title: string }) => workspace.title)).toEqual(["Seen by the agent"]);
      expect(bodies.map((body) => Object.keys(JSON.parse(body)).sort())).toEqual([["documentId", "variables"]]);
    } finally {
      await agent.client.close();
      proxy.close();
    }
  }, 120_000);
});

describe("the SDK's SSE subscriptions", () => {
  let t: TestApp | undefined;
  let server: RunningServer | undefined;
  afterAll(async () => {
    await server?.close();
    await t?.close();
  });

  it("resume a run's trace updates by documentId across a server restart: every update once, none missing", async () => {
    let open = () => {};
    const steps = [
      { toolCalls: [{ name: "gate", arguments: {} }] },
      { toolCalls: [{ name: "task_list", arguments: { action: "add", title: "next" } }] },
      { content: "Done." },
    ];
    t = await startTestApp(backend, {
      trustedDocuments: { only: true },
      runtime: {
        model: new ScriptedModel({ name: "sse", steps }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-sse-")),
        extraTools: [gateTool("gate", new Promise<void>((resolve) => (open = resolve)))],
      },
    });
    server = await startHttpServer({ app: t.app, port: 0, host: "127.0.0.1" });
    const { port, url } = server;
    const sse = createClient({ url, trustedDocuments: true, subscriptions: "sse" });
    const { run } = await admit(sse, { question: "Wait at the gate" });
    const updates = sse.traceUpdates(run.id);
    const seqs: number[] = [];
    while (seqs.length < 3) seqs.push(Number((await updates.next()).value!.seq));

    // The server goes away; the run goes on without it; the server comes back on the same port.
    await server.close();
    open();
    await settled(t.client, run.id);
    server = await startHttpServer({ app: t.app, port, host: "127.0.0.1" });
    for await (const update of updates) seqs.push(Number(update.seq));

    const lastSeq = Number(await t.app.db.prisma.trace.findFirstOrThrow({ where: { id: traceIdOf(run.id) } }).then((trace) => trace.lastSeq));
    expect(seqs).toEqual(Array.from({ length: lastSeq }, (_, i) => i + 1));
  }, 60_000);
});
