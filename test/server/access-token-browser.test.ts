// An access token in a browser, as a team's app would use one: a page served from another
// loopback origin (listed in CORS_ORIGINS) gets a token from its own backend, which holds the API
// key and mints one for a single workspace with READ and SUBSCRIBE. With it the page reads the
// workspace, is refused another workspace and createWebhook, and shows a run's live output over
// graphql-ws and over SSE; both close with "token expired" (4401 on the socket) when the token
// does. A reload fetches a fresh token and resumes each stream after the position it saved, and
// the text shown is exactly the model's: nothing repeated, nothing missing.
import { mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idOfType } from "../../src/graphql/global-id.js";
import { OpenAIModel } from "../../src/runtime/adapters/openai-model.js";
import { admit, createWorkspace } from "../support/fixtures.js";
import { type OpenAIStreamStub, startOpenAIStreamStub } from "../support/openai-stream-stub.js";
import { settled } from "../support/scripted-runs.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { haveChromium, launchChromium } from "../support/viewer-browser.js";
import { withTimeout } from "../support/wait.js";

const PIECES = Array.from({ length: 24 }, (_, i) => `piece ${i} of the answer; `);
/** The model writes the first PAUSE_AT pieces, then waits for the test. */
const PAUSE_AT = 10;
const FIRST_TOKEN_SECONDS = 6;

type Channel = {
  text: string;
  seq: string | null;
  subscribed: boolean;
  done: boolean;
  /** TEXT_DELTA updates received since the page loaded. */
  deltas: number;
  closed?: { code: number; reason: string };
  errors: string[];
};
type PageState = {
  ready: boolean;
  reads: { data?: { mine: { title: string } | null; other: { title: string } | null; node: { id: string } | null } };
  webhook: { data?: unknown; errors?: { message: string; extensions?: { code?: string } }[] };
  refusedRun: string[];
  ws: Channel;
  sse: Channel;
  shown: { ws: string; sse: string };
};

/** The page a team's app would serve: plain JavaScript, the graphql-transport-ws protocol and SSE by hand. */
const PAGE = (dossierUrl: string, wsUrl: string) => `<!doctype html><html><body>
<h1 id="title"></h1><pre id="ws"></pre><pre id="sse"></pre>
<script type="module">
const OUTPUT = "subscription ($runId: ID!, $afterSeq: String) { runOutput(runId: $runId, afterSeq: $afterSeq) { seq kind text } }";
const saved = JSON.parse(sessionStorage.getItem("output") ?? "null") ?? { ws: { text: "", seq: null }, sse: { text: "", seq: null } };
const channel = (name) => ({ text: saved[name].text, seq: saved[name].seq, subscribed: false, done: false, deltas: 0, errors: [] });
const state = (window.state = { ready: false, refusedRun: [], ws: channel("ws"), sse: channel("sse"), shown: {} });
const show = () => {
  for (const name of ["ws", "sse"]) {
    document.getElementById(name).textContent = state[name].text;
    state.shown[name] = document.getElementById(name).textContent;
  }
  sessionStorage.setItem("output", JSON.stringify({ ws: { text: state.ws.text, seq: state.ws.seq }, sse: { text: state.sse.text, seq: state.sse.seq } }));
};
const apply = (name, update) => {
  if (update.kind === "TEXT_DELTA") (state[name].text += update.text), (state[name].deltas += 1);
  if (update.kind === "RUN_DONE") state[name].done = true;
  state[name].seq = update.seq;
  show();
};
show();

// The app's own backend hands out the token (it holds the API key; the page never sees it).
const session = await (await fetch("/session")).json();
const authorization = "Bearer " + session.token;
const graphql = async (query, variables = {}) =>
  (await fetch(${JSON.stringify(dossierUrl)}, { method: "POST", headers: { "content-type": "application/json", authorization }, body: JSON.stringify({ query, variables }) })).json();

state.reads = await graphql("query ($w: ID!, $o: ID!) { mine: workspace(id: $w) { title } other: workspace(id: $o) { title } node(id: $o) { id } }",
  { w: session.workspaceId, o: session.otherWorkspaceId });
document.getElementById("title").textContent = state.reads.data?.mine?.title ?? "";
state.webhook = await graphql('mutation { createWebhook(input: { url: "https://hooks.example/x", events: [RUN_SUCCEEDED] }) { __typename } }');

// graphql-ws, spoken directly.
const socket = new WebSocket(${JSON.stringify(wsUrl)}, "graphql-transport-ws");
socket.onopen = () => socket.send(JSON.stringify({ type: "connection_init", payload: { headers: { authorization } } }));
socket.onmessage = (event) => {
  const message = JSON.parse(event.data);
  if (message.type === "connection_ack") {
    socket.send(JSON.stringify({ id: "mine", type: "subscribe", payload: { query: OUTPUT, variables: { runId: session.runId, afterSeq: state.ws.seq } } }));
    socket.send(JSON.stringify({ id: "other", type: "subscribe", payload: { query: OUTPUT, variables: { runId: session.otherRunId } } }));
    state.ws.subscribed = true;
  } else if (message.type === "next" || message.type === "error") {
    const errors = (message.type === "error" ? message.payload : message.payload.errors ?? []).map((e) => e.extensions?.code ?? e.message);
    if (message.id === "other") state.refusedRun.push(...errors);
    else state.ws.errors.push(...errors);
    if (message.type === "next" && message.payload.data) apply("ws", message.payload.data.runOutput);
  }
};
socket.onclose = (event) => (state.ws.closed = { code: event.code, reason: event.reason });

// SSE: a streamed fetch, since EventSource cannot send an Authorization header.
(async () => {
  const response = await fetch(${JSON.stringify(dossierUrl)}, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream", authorization },
    body: JSON.stringify({ query: OUTPUT, variables: { runId: session.runId, afterSeq: state.sse.seq } }),
  });
  state.sse.subscribed = true;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += value;
    const events = buffered.split("\\n\\n");
    buffered = events.pop();
    for (const event of events) {
      const data = /^data: (.+)$/m.exec(event)?.[1];
      if (!data) continue;
      const message = JSON.parse(data);
      if (message.errors) state.sse.errors.push(...message.errors.map((e) => e.extensions?.code ?? e.message));
      if (message.data) apply("sse", message.data.runOutput);
    }
  }
  state.sse.closed = { code: 0, reason: "ended" };
})();
state.ready = true;
</script></body></html>`;

describe.runIf(haveChromium || process.env.CI)("an access token in a page on another origin, in Chromium", () => {
  let browser: Browser;
  let stub: OpenAIStreamStub;
  let site: Server;
  let t: TestApp;
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  let paused: () => void = () => undefined;
  const pausedMidAnswer = new Promise<void>((resolve) => (paused = resolve));
  /** What the app's backend hands its page, and how long its next token lives. */
  const backend = { key: "", ttl: FIRST_TOKEN_SECONDS, minted: 0, ids: {} as Record<string, string> };

  beforeAll(async () => {
    stub = await startOpenAIStreamStub(() => ({
      text: PIECES,
      gapMs: 20,
      pause: { index: PAUSE_AT, until: released },
      sent: (index) => index === PAUSE_AT - 1 && paused(),
    }));
    // The app's site: its page, and its backend's /session that mints a token with the API key.
    site = createServer(async (request, response) => {
      if (request.url === "/session") {
        const minted = await fetch(t.server!.url, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${backend.key}` },
          body: JSON.stringify({
            query: `mutation ($input: CreateAccessTokenInput!) { createAccessToken(input: $input) { ... on CreateAccessTokenSuccess { token } } }`,
            variables: {
              input: { grants: [{ resourceId: backend.ids.workspaceId, operations: ["READ", "SUBSCRIBE"] }], expiresInSeconds: backend.ttl, label: "page" },
            },
          }),
        });
        const { data } = (await minted.json()) as { data: { createAccessToken: { token: string } } };
        backend.minted += 1;
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token: data.createAccessToken.token, ...backend.ids }));
        return;
      }
      response.writeHead(200, { "content-type": "text/html" }).end(PAGE(t.server!.url, t.server!.wsUrl));
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    t = await startTestApp("pglite", {
      listen: true,
      authRequired: true,
      corsOrigins: [`http://localhost:${(site.address() as AddressInfo).port}`],
      runtime: {
        model: new OpenAIModel({ baseURL: stub.baseURL, apiKey: "sk-local", model: "stub-model", contextWindow: 32_000, maxRetries: 0 }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-token-page-")),
        leaseMs: 30_000,
      },
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    release();
    await browser?.close();
    await new Promise<void>((resolve) => (site ? site.close(() => resolve()) : resolve()));
    await t?.close();
    await stub?.close();
  });

  const state = (page: Page) => page.evaluate(() => (window as unknown as { state: PageState }).state);
  const until = (page: Page, condition: string, timeout = 30_000) => page.waitForFunction(condition, undefined, { timeout, polling: 50 });

  it("reads its workspace only, watches the run live over graphql-ws and SSE until the token expires, and resumes exactly after a reload", async () => {
    backend.key = await t.createPrincipal("Team backend");
    const client = t.as(backend.key);
    const mine = await createWorkspace(client, "Watched from the page");
    const other = await createWorkspace(client, "Not granted");
    // The run is live, half-way through its answer, when the page opens (a short token's life
    // must not depend on how fast a busy machine starts a run).
    const { run } = await admit(client, { workspaceId: mine.id, question: "Stream an answer" });
    await withTimeout(pausedMidAnswer, 60_000);
    const { run: otherRun } = await admit(client, { workspaceId: other.id, question: "Elsewhere" });
    backend.ids = { workspaceId: mine.id, otherWorkspaceId: other.id, runId: run.id, otherRunId: otherRun.id };
    const origin = `http://localhost:${(site.address() as AddressInfo).port}/`;

    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on("pageerror", (error) => pageErrors.push(String(error)));
    await page.goto(origin);
    await until(page, "window.state?.ready && window.state.ws.subscribed && window.state.sse.subscribed");
    const opened = await state(page);
    expect(opened.reads).toEqual({ data: { mine: { title: "Batteries" }, other: null, node: null } });
    expect(opened.webhook.data).toEqual({ createWebhook: { __typename: "ForbiddenError" } });
    expect(await t.app.db.prisma.webhook.count()).toBe(0);
    await until(page, "window.state.refusedRun.length > 0");
    expect((await state(page)).refusedRun).toEqual(["NOT_FOUND"]);

    // Live: the model has written its first pieces and waits; the page shows exactly those.
    const firstPart = PIECES.slice(0, PAUSE_AT).join("");
    await until(page, `window.state.ws.text === ${JSON.stringify(firstPart)} && window.state.sse.text === ${JSON.stringify(firstPart)}`);

    // The token expires while the run is still streaming: the socket closes with 4401, SSE ends with TOKEN_EXPIRED.
    await until(page, "window.state.ws.closed && window.state.sse.closed", (FIRST_TOKEN_SECONDS + 10) * 1000);
    const expired = await state(page);
    expect(expired.ws.closed).toEqual({ code: 4401, reason: "token expired" });
    expect(expired.sse.errors).toEqual(["TOKEN_EXPIRED"]);
    // The subscription's own "token expired" error may reach the page just before the socket closes.
    expect(expired.ws.errors.filter((error) => error !== "TOKEN_EXPIRED")).toEqual([]);
    expect([expired.ws.done, expired.sse.done]).toEqual([false, false]);
    expect(expired.shown).toEqual({ ws: firstPart, sse: firstPart });
    expect((await t.app.db.prisma.run.findUniqueOrThrow({ where: { id: idOfType(run.id, "Run")! }, select: { status: true } })).status).toBe("RUNNING");

    // A reload: a fresh token from the backend, each stream resumed after the position the page saved.
    backend.ttl = 300;
    await page.reload();
    await until(page, "window.state?.ready && window.state.ws.subscribed && window.state.sse.subscribed");
    expect(backend.minted).toBe(2);
    // Nothing is repeated while the run still waits…
    await page.waitForTimeout(500);
    expect((await state(page)).shown).toEqual({ ws: firstPart, sse: firstPart });
    // …and nothing is missing once it goes on.
    release();
    await until(page, "window.state.ws.done && window.state.sse.done");
    expect((await settled(client, run.id)).status).toBe("SUCCEEDED");
    const finished = await state(page);
    expect(finished.shown).toEqual({ ws: PIECES.join(""), sse: PIECES.join("") });
    // The rest came as it was produced, not as one piece at the end.
    expect(finished.ws.deltas).toBeGreaterThan(1);
    expect(finished.sse.deltas).toBeGreaterThan(1);
    expect(await page.locator("#ws").textContent()).toBe(PIECES.join(""));
    expect([finished.ws.errors, finished.sse.errors, finished.ws.closed]).toEqual([[], [], undefined]);
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
