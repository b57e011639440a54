// No cross-site requests, as a browser makes them: a page on another origin (another port of the
// same host) tries to create a workspace — by a JSON fetch with credentials, a text/plain fetch,
// and form, multipart and text/plain form posts to the endpoint and to every other path Yoga would
// have taken for it — and to read the keyless development principal's data, hold its
// subscriptions (EventSource) and open a WebSocket. The same mutation and subscription succeed
// from the server's own page; from the other origin nothing is created, read or held.
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Browser, chromium, type Request } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { admit } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";
import { waitUntil } from "../support/wait.js";

const CHROMIUM = "/usr/bin/chromium";

/** How many GraphQL operations the app has executed (its Prometheus count, every type and outcome). */
async function operationsExecuted(t: TestApp): Promise<number> {
  const lines = (await t.app.metrics.render()).split("\n").filter((line) => line.startsWith("dossier_graphql_operation_duration_seconds_count"));
  return lines.reduce((sum, line) => sum + Number(line.split(" ").pop()), 0);
}

describe.runIf(existsSync(CHROMIUM) || process.env.CI)("a page on another origin, in Chromium", () => {
  let browser: Browser;
  let t: TestApp | undefined;
  let attacker: Server | undefined;
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      // Two names on the network that are not loopback's: pages there are not a secure context.
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--host-resolver-rules=MAP dossier.lan 127.0.0.1, MAP evil.lan 127.0.0.1",
      ],
    });
  });
  afterAll(async () => browser?.close());
  afterEach(async () => {
    await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
    await t?.close();
    t = undefined;
  });

  it("can neither change nor read anything on the embedded default, at the endpoint or any other spelling of it", async () => {
    // The embedded default at its most exposed: no key needed. The target is another port of the page's own host.
    t = await startTestApp("pglite", { listen: true });
    const { run } = await admit(t.client, { question: "A private question?" });
    const own = `http://localhost:${t.server!.port}`;
    const target = `${own}/graphql`;
    const mutation = 'mutation { createWorkspace(input: { title: "Forged", goal: "Sent by another site" }) { __typename } }';
    const subscription = `${own}/graphql/?query=${encodeURIComponent(`subscription { runEvents(runId: "${run.id}") { status } }`)}`;
    const page = await browser.newPage();

    // The control: the same mutation and subscription from the server's own page succeed.
    await page.goto(`${own}/health`);
    const listening = t.listeners();
    const control = await page.evaluate(
      async ([url, query]) => (await fetch(url!, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query }) })).text(),
      [target, mutation],
    );
    expect(control).toContain("CreateWorkspaceSuccess");
    await page.evaluate((url) => void new EventSource(url.replace("/graphql/", "/graphql")), subscription);
    await waitUntil(() => t!.listeners() > listening || undefined, 10_000);
    await page.goto("about:blank");
    await waitUntil(() => t!.listeners() === listening || undefined, 10_000);
    const workspaces = await t.app.db.prisma.workspace.count();

    // Forms post to the endpoint and to every path Yoga would have taken for it, each into a frame.
    const forms = [
      ...["/graphql", "/graphql/", "/x/graphql", "/?/graphql", "//graphql"].map((path) => ({
        path,
        type: "application/x-www-form-urlencoded",
        name: "query",
        value: mutation,
      })),
      ...["/graphql", "/graphql/", "/x/graphql/"].map((path) => ({
        path,
        type: "multipart/form-data",
        name: "operations",
        value: JSON.stringify({ query: mutation }),
      })),
      ...["/graphql", "/graphql/"].map((path) => ({ path, type: "text/plain", name: "query", value: mutation })),
    ];
    const html = forms
      .map(
        ({ path, type, name, value }, i) =>
          `<form method="POST" action="${own}${path}" target="sink${i}" enctype="${type}"><input name="${name}" value='${value}'></form><iframe name="sink${i}" onload="window.loaded++"></iframe>`,
      )
      .join("\n");
    attacker = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><body>${html}
<script>
  window.loaded = 0;
  window.results = {};
  const graphql = (body, type) => fetch(${JSON.stringify(target)}, { method: "POST", credentials: "include", headers: { "content-type": type }, body });
  for (const url of [${JSON.stringify(subscription)}, ${JSON.stringify(subscription.replace("/graphql/", "/graphql"))}, ${JSON.stringify(subscription.replace("/graphql/", "/x/graphql"))}]) new EventSource(url);
  Promise.allSettled([
    graphql(JSON.stringify({ query: ${JSON.stringify(mutation)} }), "application/json").then((r) => r.text()),
    graphql(JSON.stringify({ query: ${JSON.stringify(mutation)} }), "text/plain").then((r) => r.text()),
    graphql(JSON.stringify({ query: "{ workspaces(first: 5) { edges { node { title } } } }" }), "application/json").then((r) => r.text()),
    ...["/graphql", "/graphql/"].map((path) => new Promise((resolve, reject) => {
      const socket = new WebSocket(${JSON.stringify(own.replace("http:", "ws:"))} + path, "graphql-transport-ws");
      socket.onopen = () => resolve("open");
      socket.onerror = () => reject(new Error("refused"));
    })),
  ]).then((settled) => {
    window.results = settled.map((s) => s.status + ":" + (s.value ?? s.reason));
    window.loaded = 0;
    for (const form of document.forms) form.submit();
    window.done = true;
  });
</script></body>`);
    });
    await new Promise<void>((resolve) => attacker!.listen(0, "127.0.0.1", resolve));
    await page.goto(`http://localhost:${(attacker.address() as AddressInfo).port}/`);
    await page.waitForFunction(() => (window as unknown as { done?: boolean }).done === true, undefined, { timeout: 15_000 });
    // Every form's answer has arrived in its frame.
    await page.waitForFunction((count) => (window as unknown as { loaded: number }).loaded >= count, forms.length, { timeout: 15_000 });
    const results = (await page.evaluate(() => (window as unknown as { results: string[] }).results)) as string[];
    // Every read is refused by the browser; none of the writes reached a resolver; no subscription listens.
    expect(results).toEqual([
      "rejected:TypeError: Failed to fetch",
      "rejected:TypeError: Failed to fetch",
      "rejected:TypeError: Failed to fetch",
      "rejected:Error: refused",
      "rejected:Error: refused",
    ]);
    expect(await t.app.db.prisma.workspace.count()).toBe(workspaces);
    expect(t.listeners()).toBe(listening);
    await page.close();
  });

  it("runs nothing for another site's <img> and frames on plain http under a name that is not loopback's, which send neither Origin nor Sec-Fetch-Site", async () => {
    t = await startTestApp("pglite", { listen: true, allowedHosts: ["dossier.lan"], graphiql: false, maxSubscriptionsPerKey: 2 });
    const { run } = await admit(t.client, { question: "A private question?" });
    const own = `http://dossier.lan:${t.server!.port}`;
    const query = `${own}/graphql?query=${encodeURIComponent("{ viewer { id } }")}`;
    const subscription = `${own}/graphql?query=${encodeURIComponent(`subscription { runEvents(runId: "${run.id}") { status } }`)}`;
    const elements = [`<img src="${query}">`, `<iframe src="${subscription}&n=1"></iframe>`, `<iframe src="${subscription}&n=2"></iframe>`];
    attacker = createServer((_request, response) => void response.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html>${elements.join("")}`));
    await new Promise<void>((resolve) => attacker!.listen(0, "127.0.0.1", resolve));
    const page = await browser.newPage();
    // Each request the elements sent, with the headers it went with, once the browser settled it (the browser blocks every answer).
    const settled: { origin?: string; site?: string }[] = [];
    const settle = (request: Request) => {
      const headers = request.headers();
      if (request.url().startsWith(own)) settled.push({ origin: headers.origin, site: headers["sec-fetch-site"] });
    };
    page.on("requestfinished", settle).on("requestfailed", settle);
    const listening = t.listeners();
    const executed = await operationsExecuted(t);
    await page.goto(`http://evil.lan:${(attacker.address() as AddressInfo).port}/`, { waitUntil: "commit" });
    // Until every element's request is settled, or one of them ran an operation.
    await waitUntil(async () => settled.length === elements.length || (await operationsExecuted(t!)) > executed || undefined, 15_000);
    // Not one operation ran, and no subscription holds a share of the key.
    expect(await operationsExecuted(t)).toBe(executed);
    expect(t.listeners()).toBe(listening);
    expect(settled).toEqual(elements.map(() => ({ origin: undefined, site: undefined })));

    // The server's own page subscribes (an EventSource says it takes an event stream) as often as the key's share allows.
    await page.goto(`${own}/health`);
    await page.evaluate((url) => {
      for (let i = 0; i < 2; i += 1) new EventSource(url);
    }, subscription);
    await waitUntil(() => t!.listeners() === listening + 2 || undefined, 10_000);
    const read = await page.evaluate(async (url) => (await fetch(url, { headers: { accept: "application/graphql-response+json" } })).status, query);
    expect(read).toBe(200);
    await page.close();
  });
});
