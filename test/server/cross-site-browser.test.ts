// No cross-site requests, as a browser makes them: a page on another origin (another port of the
// same host) tries to create an MCP server that runs a command — by a JSON fetch with
// credentials, a form post and a text/plain fetch — and to read the keyless development
// principal's data and open a WebSocket. Nothing is created, nothing is read.
import { existsSync, mkdtempSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createWorkspace } from "../support/fixtures.js";
import { startTestApp, type TestApp } from "../support/test-app.js";

const CHROMIUM = "/usr/bin/chromium";

describe.runIf(existsSync(CHROMIUM) || process.env.CI)("a page on another origin, in Chromium", () => {
  let browser: Browser;
  let t: TestApp | undefined;
  let attacker: Server | undefined;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
  });
  afterAll(async () => browser?.close());
  afterEach(async () => {
    await new Promise<void>((resolve) => (attacker ? attacker.close(() => resolve()) : resolve()));
    await t?.close();
    t = undefined;
  });

  it("can neither change nor read anything on the embedded default", async () => {
    // The embedded default at its most exposed: no key needed, the program allowed for STDIO servers.
    t = await startTestApp("pglite", { listen: true, mcp: { stdioCommands: ["/usr/bin/touch"] } });
    await createWorkspace(t.client, "A private goal");
    const target = t.server!.url;
    const marker = path.join(mkdtempSync(path.join(tmpdir(), "dossier-xsite-")), "touched");
    const mutation = `mutation { upsertMcpServer(input: { name: "x", transport: STDIO, command: "/usr/bin/touch", args: ["${marker}"] }) { __typename } }`;
    attacker = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><body>
<form id="f" method="POST" action="${target}" target="sink" enctype="application/x-www-form-urlencoded">
  <input name="query" value='${mutation}'>
</form>
<iframe name="sink"></iframe>
<script>
  window.results = {};
  const graphql = (body, type) => fetch(${JSON.stringify(target)}, { method: "POST", credentials: "include", headers: { "content-type": type }, body });
  Promise.allSettled([
    graphql(JSON.stringify({ query: ${JSON.stringify(mutation)} }), "application/json").then((r) => r.text()),
    graphql(JSON.stringify({ query: ${JSON.stringify(mutation)} }), "text/plain").then((r) => r.text()),
    graphql(JSON.stringify({ query: "{ workspaces(first: 5) { edges { node { title } } } }" }), "application/json").then((r) => r.text()),
    new Promise((resolve, reject) => {
      const socket = new WebSocket(${JSON.stringify(t!.server!.wsUrl)}, "graphql-transport-ws");
      socket.onopen = () => resolve("open");
      socket.onerror = () => reject(new Error("refused"));
    }),
  ]).then((settled) => { window.results = settled.map((s) => s.status + ":" + (s.value ?? s.reason)); document.getElementById("f").submit(); window.done = true; });
</script></body>`);
    });
    await new Promise<void>((resolve) => attacker!.listen(0, "127.0.0.1", resolve));
    const page = await browser.newPage();
    await page.goto(`http://localhost:${(attacker.address() as AddressInfo).port}/`);
    await page.waitForFunction(() => (window as unknown as { done?: boolean }).done === true, undefined, { timeout: 15_000 });
    await page.waitForTimeout(1_000); // the form post's response
    const results = (await page.evaluate(() => (window as unknown as { results: string[] }).results)) as string[];
    // Every read is refused by the browser; none of the writes reached a resolver.
    expect(results).toEqual([
      "rejected:TypeError: Failed to fetch",
      "rejected:TypeError: Failed to fetch",
      "rejected:TypeError: Failed to fetch",
      "rejected:Error: refused",
    ]);
    expect(await t.app.db.prisma.mcpServer.count()).toBe(0);
    expect(existsSync(marker)).toBe(false);
    await page.close();
  });
});
