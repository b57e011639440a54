// A5: GraphiQL at /graphql in headless Chromium with every request to another host refused: the
// page renders from what the server serves, each example tab shows its own operation, the first
// one runs, a subscription receives an update, and an API key in a tab's headers works for
// queries and subscriptions; a traceUpdates subscription's frames accumulate in the result. Needs
// Debian's chromium (.ci/run installs it).
import { existsSync, mkdirSync, mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { parse } from "graphql";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CancelRunDocument } from "../../sdk/generated/graphql.js";
import { idOfType } from "../../src/graphql/global-id.js";
import { ScriptedModel } from "../../src/runtime/adapters/scripted-model.js";
import { graphiqlDefaultTabs } from "../../src/server/graphiql.js";
import { admit, createWorkspace, expectType } from "../support/fixtures.js";
import { projectRoot } from "../support/processes.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { drawnEditorText } from "../support/monaco-text.js";
import { waitUntil } from "../support/wait.js";

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost"]);

/** What a tab is titled: its first operation's name. */
const titleOf = (query: string) => parse(query).definitions.flatMap((d) => (d.kind === "OperationDefinition" && d.name ? [d.name.value] : []))[0];

type Opened = { page: Page; outside: string[]; problems: string[] };

describe.runIf(haveChromium || process.env.CI)("GraphiQL in Chromium, offline", () => {
  let browser: Browser;
  let t: TestApp | undefined;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
  });
  afterAll(async () => browser?.close());
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  /**
   * Opens GraphiQL in a fresh browser profile that refuses (and records) every request to a host
   * other than this machine, after leaving `stored` in the origin's localStorage.
   */
  async function openGraphiQL(url: string, stored: Record<string, string> = {}): Promise<Opened> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const outside: string[] = [];
    await context.route("**/*", (route) => {
      const requested = new URL(route.request().url());
      if (LOCAL_HOSTS.has(requested.hostname)) return route.continue();
      outside.push(requested.href);
      return route.abort("blockedbyclient");
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("console", (message) => message.type() === "error" && problems.push(`console: ${message.text()}`));
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("response", (response) => response.status() >= 400 && problems.push(`${response.status()} ${response.url()}`));
    page.on("websocket", (socket) => !LOCAL_HOSTS.has(new URL(socket.url()).hostname) && outside.push(socket.url()));
    await page.goto(new URL("/health", url).href);
    await page.evaluate((entries) => {
      for (const [key, value] of Object.entries(entries)) localStorage.setItem(key, value);
    }, stored);
    await page.goto(url);
    await page
      .locator(".graphiql-tab")
      .nth(graphiqlDefaultTabs.length - 1)
      .waitFor({ timeout: 60_000 });
    return { page, outside, problems };
  }

  /** The query editor's whole text: Yoga's GraphiQL mirrors it into the address bar (?query=) on every change. */
  const queryEditorText = (page: Page) => new URL(page.url()).searchParams.get("query");
  /** What the editors show on screen (Monaco draws only the visible lines, with no-break spaces). */
  const shown = async (page: Page, selector: string) => ((await page.locator(selector).first().textContent()) ?? "").replace(/\u00a0/g, " ");
  const response = (page: Page) => shown(page, ".graphiql-response");

  /** Every line of the result, in order, as Monaco draws them. */
  const wholeResponse = (page: Page) => drawnEditorText(page, ".graphiql-response");

  /** Waits for what the page should come to show, or fails saying what it shows instead. */
  async function eventually(page: Page, what: string, check: () => Promise<boolean> | boolean) {
    try {
      await waitUntil(async () => ((await check()) ? true : undefined), 20_000);
    } catch {
      const editor = queryEditorText(page)?.split("\n")[0];
      throw new Error(`${what}: not seen within 20 s. Query editor: ${editor}; response: ${await response(page)}`);
    }
  }

  async function openTab(page: Page, index: number) {
    await page.locator(`#graphiql-session-tab-${index}`).click();
    await eventually(page, `tab ${index}'s operation in the editor`, () => queryEditorText(page) === graphiqlDefaultTabs[index]!.query);
  }

  /** Runs one of the active tab's operations with the ▶ button (it asks which, when there are several). */
  async function run(page: Page, operationName: string) {
    await page.locator(".graphiql-execute-button").click();
    await page.getByRole("menuitem", { name: operationName, exact: true }).click();
  }

  /** Replaces the text of the visible editor below the query: "Variables" or "Headers". */
  async function fillEditorTool(page: Page, tool: "Variables" | "Headers", text: string) {
    await page.locator(".graphiql-editor-tools").getByRole("button", { name: tool, exact: true }).click();
    await page.locator(".graphiql-editor-tool .graphiql-editor:not(.hidden)").click();
    // Emptied first: typed over a selection, "{" would wrap the old text (Monaco's auto-surround).
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.press("Delete");
    await page.keyboard.insertText(text);
    const editor = ".graphiql-editor-tool .graphiql-editor:not(.hidden)";
    await eventually(page, `${text} in ${tool}`, async () => (await shown(page, editor)).endsWith(text));
  }

  it("renders with no request leaving the machine, each tab showing its operation; the first runs and a subscription updates", async () => {
    t = await startTestApp("pglite", { listen: true });
    // What an older GraphiQL on this origin left behind: its tabs would replace the examples.
    const older = "query Older { viewer { id } }";
    const olderTabs = {
      activeTabIndex: 0,
      tabs: [{ id: "older", title: "Older", query: older, variables: null, headers: null, operationName: "Older", response: null }],
    };
    const { page, outside, problems } = await openGraphiQL(t.server!.url, { "graphiql:tabState": JSON.stringify(olderTabs), "graphiql:query": older });

    expect(await page.locator("#root").textContent()).not.toContain("Loading");
    await page.locator(".graphiql-query-editor .view-lines").waitFor();
    expect(await page.locator(".graphiql-tab-button").allTextContents()).toEqual(graphiqlDefaultTabs.map((tab) => titleOf(tab.query)));
    for (const index of [1, 2, 3, 0]) {
      await openTab(page, index);
      const tab = graphiqlDefaultTabs[index]!;
      expect(await shown(page, ".graphiql-query-editor")).toContain(tab.query.split("\n")[0]);
      for (const name of Object.keys(JSON.parse(tab.variables ?? "{}"))) expect(await shown(page, ".graphiql-editor-tool")).toContain(`"${name}"`);
    }

    await run(page, "Viewer");
    await eventually(page, '"data"', async () => (await response(page)).includes('"data"'));
    expect(await response(page)).toContain('"name": "Development principal"');

    // A run nobody executes (no worker) stays queued until the test cancels it.
    const workspace = await createWorkspace(t.client);
    const { run: queued } = await admit(t.client, { workspaceId: workspace.id, question: "Who makes cells?" });
    await openTab(page, 2);
    await fillEditorTool(page, "Variables", JSON.stringify({ runId: queued.id }));
    const listening = t.listeners();
    await run(page, "RunEvents");
    await eventually(page, "the subscription listening", () => t!.listeners() > listening);
    expect(await response(page)).not.toContain("CANCELLED");
    expectType((await t.client.request(CancelRunDocument, { input: { runId: queued.id } })).cancelRun, "CancelRunSuccess");
    await eventually(page, '"status": "CANCELLED"', async () => (await response(page)).includes('"status": "CANCELLED"'));

    const screenshot = path.join(projectRoot, "test-results", "graphiql.png");
    mkdirSync(path.dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot });

    // Reopened, the page keeps the four tabs (one is named after the operation it ran last) and
    // shows the one it showed. GraphiQL saves its tabs a moment after they change: the page is
    // reopened once they are saved, as a person's next visit would find them.
    const savedTabs = () => page.evaluate(() => Object.entries(localStorage).find(([key]) => key.startsWith("graphiql:tabState@"))?.[1] ?? "");
    await eventually(page, "the tabs saved with the RunEvents title", async () => {
      const saved = await savedTabs();
      return saved.includes('"title":"RunEvents"') && saved.includes(queued.id);
    });
    await page.reload();
    await page.locator(".graphiql-tab-active").waitFor({ timeout: 60_000 });
    const titles = graphiqlDefaultTabs.map((tab) => titleOf(tab.query));
    titles[2] = "RunEvents";
    expect(await page.locator(".graphiql-tab-button").allTextContents()).toEqual(titles);
    expect(await page.locator(".graphiql-tab-active .graphiql-tab-button").textContent()).toBe("RunEvents");
    expect(await shown(page, ".graphiql-editor-tool")).toContain(queued.id);

    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("sends the API key in a tab's headers with its queries and its subscriptions", async () => {
    t = await startTestApp("pglite", { listen: true, authRequired: true });
    const key = await t.createPrincipal("Ada");
    // What an older page kept: a key in the headers and in a tab's headers, kept by no setting.
    const kept = {
      headers: '{"authorization":"Bearer older-key"}',
      tabs: [{ id: "a", query: "{ viewer { id } }", headers: '{"authorization":"Bearer older-key"}' }],
    };
    const stored = { "graphiql:headers@dossier-0": kept.headers, "graphiql:tabState@dossier-0": JSON.stringify({ activeTabIndex: 0, tabs: kept.tabs }) };
    const { page, outside } = await openGraphiQL(t.server!.url, { ...stored, "graphiql:headers": kept.headers, "graphiql:shouldPersistHeaders": "true" });
    const storedText = () => page.evaluate(() => JSON.stringify(localStorage));
    expect(await storedText()).not.toContain("older-key");

    await run(page, "Viewer");
    await eventually(page, "UNAUTHENTICATED", async () => (await response(page)).includes("UNAUTHENTICATED"));
    await fillEditorTool(page, "Headers", JSON.stringify({ authorization: `Bearer ${key}` }));
    await run(page, "Viewer");
    await eventually(page, '"name": "Ada"', async () => (await response(page)).includes('"name": "Ada"'));

    // Headers belong to a tab: the subscription's tab gets the key too, and it reaches graphql-ws.
    const workspace = await createWorkspace(t.as(key));
    const { run: queued } = await admit(t.as(key), { workspaceId: workspace.id, question: "Who makes cells?" });
    await openTab(page, 2);
    await fillEditorTool(page, "Variables", JSON.stringify({ runId: queued.id }));
    await fillEditorTool(page, "Headers", JSON.stringify({ authorization: `Bearer ${key}` }));
    const listening = t.listeners();
    await run(page, "RunEvents");
    await eventually(page, "the subscription listening", () => t!.listeners() > listening);
    expectType((await t.as(key).request(CancelRunDocument, { input: { runId: queued.id } })).cancelRun, "CancelRunSuccess");
    await eventually(page, '"status": "CANCELLED"', async () => (await response(page)).includes('"status": "CANCELLED"'));
    // The key is kept nowhere in the browser: the tabs are saved (with the run's id), their headers are not.
    await eventually(page, "the tabs saved", async () => (await storedText()).includes(queued.id));
    expect(await storedText()).not.toContain(key);

    expect(outside).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("shows every traceUpdates frame so far in the result, oldest first, not only the latest", async () => {
    t = await startTestApp("pglite", {
      listen: true,
      runtime: {
        model: new ScriptedModel({
          name: "graphiql",
          steps: [{ toolCalls: [{ name: "task_list", arguments: { action: "add", title: "one" } }] }, { content: "done" }],
        }),
        sandboxDir: mkdtempSync(path.join(tmpdir(), "dossier-graphiql-")),
      },
    });
    const { run: finished } = await admit(t.client, { question: "Trace me" });
    await waitUntil(async () =>
      (await t!.app.db.prisma.run.findUniqueOrThrow({ where: { id: idOfType(finished.id, "Run")! } })).status === "SUCCEEDED" ? true : undefined,
    );
    const { page, problems } = await openGraphiQL(t.server!.url);
    await openTab(page, 2);
    await fillEditorTool(page, "Variables", JSON.stringify({ runId: finished.id }));
    // What the server sends: each traceUpdates frame, as GraphiQL's socket receives it.
    const sent: string[] = [];
    page.on("websocket", (socket) =>
      socket.on("framereceived", ({ payload }) => {
        const message = JSON.parse(String(payload)) as { type: string; payload?: { data?: { traceUpdates?: { seq: string } } } };
        if (message.type === "next" && message.payload?.data?.traceUpdates) sent.push(message.payload.data.traceUpdates.seq);
      }),
    );
    await run(page, "TraceUpdates");
    await eventually(page, "TRACE_ENDED", async () => (await wholeResponse(page)).includes("TRACE_ENDED"));
    const shownText = await wholeResponse(page);
    const shownSeqs = [...shownText.matchAll(/"seq": "(\d+)"/g)].map((match) => match[1]);
    const kinds = [...shownText.matchAll(/^ {8}"kind": "([A-Z_]+)"/gm)].map((match) => match[1]);
    // Every frame sent, oldest first, in one result: not only the last one (TRACE_ENDED).
    expect(sent.length).toBeGreaterThan(4);
    expect(shownSeqs).toEqual(sent);
    expect(kinds[0]).toBe("SPAN_STARTED");
    expect(kinds.at(-1)).toBe("TRACE_ENDED");
    expect(shownText).toContain(`"frames": ${sent.length}`);
    expect(shownText).toContain('"kind": "TOOL_CALL"');
    expect(problems).toEqual([]);
    await page.context().close();
  }, 240_000);

  it("keeps a subscription in one window updating while a second window changes what it watches (the README's two windows)", async () => {
    t = await startTestApp("pglite", { listen: true });
    const workspace = await createWorkspace(t.client);
    // Each window opens with the README's operation in a tab of its own (Yoga's GraphiQL takes ?query=).
    const watch = `subscription {\n  workspaceEvents(workspaceId: "${workspace.id}") { kind goal { version statement } }\n}`;
    const update = `mutation {\n  updateGoal(input: { workspaceId: "${workspace.id}", statement: "Only LFP cells", expectedVersion: 1 }) { __typename }\n}`;
    const first = await openGraphiQL(`${t.server!.url}?query=${encodeURIComponent(watch)}`);
    const listening = t.listeners();
    await first.page.locator(".graphiql-execute-button").click();
    await eventually(first.page, "the subscription listening", () => t!.listeners() > listening);
    const second = await first.page.context().newPage();
    await second.goto(`${t.server!.url}?query=${encodeURIComponent(update)}`);
    await second.locator(".graphiql-execute-button").click();
    await eventually(second, "UpdateGoalSuccess", async () => (await response(second)).includes("UpdateGoalSuccess"));
    await eventually(first.page, "the new goal in the first window", async () => (await response(first.page)).includes("Only LFP cells"));
    expect(first.problems).toEqual([]);
    await first.page.context().close();
  }, 240_000);

  it("runs its examples, a query and a subscription, on a server that runs only trusted documents with GRAPHIQL=true", async () => {
    t = await startTestApp("pglite", { listen: true, trustedDocuments: { only: true }, graphiql: true });
    const { page, outside, problems } = await openGraphiQL(t.server!.url);
    await run(page, "Viewer");
    await eventually(page, '"name": "Development principal"', async () => (await response(page)).includes('"name": "Development principal"'));

    const workspace = await createWorkspace(t.client);
    const { run: queued } = await admit(t.client, { workspaceId: workspace.id, question: "Who makes cells?" });
    await openTab(page, 2);
    await fillEditorTool(page, "Variables", JSON.stringify({ runId: queued.id }));
    const listening = t.listeners();
    await run(page, "RunEvents");
    await eventually(page, "the subscription listening", () => t!.listeners() > listening);
    expectType((await t.client.request(CancelRunDocument, { input: { runId: queued.id } })).cancelRun, "CancelRunSuccess");
    await eventually(page, '"status": "CANCELLED"', async () => (await response(page)).includes('"status": "CANCELLED"'));

    // The same example without GraphiQL's header is refused.
    const refused = await fetch(t.server!.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
      body: JSON.stringify({ query: graphiqlDefaultTabs[0]!.query, operationName: "Viewer" }),
    });
    expect(refused.status).toBe(400);
    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    await page.context().close();
  }, 240_000);
  it("cannot be framed by another site's page, so no click there runs the operation it put in the address", async () => {
    t = await startTestApp("pglite", { listen: true });
    const planted = `mutation {\n  createWorkspace(input: { title: "planted", goal: "by a framing page" }) { __typename }\n}`;
    const framed = `${t.server!.url}?query=${encodeURIComponent(planted)}`;
    // Another origin (another port of this machine) whose page frames GraphiQL with its own operation.
    const host = createServer((_request, answer) => {
      answer.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      answer.end(`<!doctype html><title>elsewhere</title><iframe id="graphiql" src="${framed}" width="1200" height="700"></iframe>`);
    });
    await new Promise<void>((resolve) => host.listen(0, "127.0.0.1", resolve));
    try {
      const context = await browser.newContext();
      const page = await context.newPage();
      const refusals: string[] = [];
      page.on("console", (message) => refusals.push(message.text()));
      await page.goto(`http://127.0.0.1:${(host.address() as AddressInfo).port}/`);
      await page.waitForLoadState("load");
      await expect.poll(() => refusals.some((text) => text.includes("frame-ancestors 'none'")), { timeout: 20_000 }).toBe(true);
      const frame = page.frames().find((candidate) => candidate !== page.mainFrame())!;
      expect(await frame.locator(".graphiql-container").count()).toBe(0);
      // The page itself, opened directly, still works (the other tests use it).
      const direct = await fetch(framed, { headers: { accept: "text/html" } });
      expect(direct.headers.get("content-security-policy")).toBe("frame-ancestors 'none'");
      expect(direct.headers.get("x-frame-options")).toBe("DENY");
      // Read to its end: a response still being sent holds the server's close for its grace period.
      await direct.text();
      await context.close();
    } finally {
      await new Promise((resolve) => host.close(resolve));
    }
  }, 120_000);
});
