// The trace viewer inside another application, in headless Chromium: a page on an origin
// VIEWER_FRAME_ANCESTORS lists frames it, any other origin is refused; framed, the viewer takes a
// key or an access token from its fragment at any time (the framing page sets it) without
// reloading; in a tab of its own, one put into its fragment waits in the form until the person
// chooses it; and it asks for one — with a form that works — when the run is not visible.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Frame, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { DossierClient } from "../../sdk/client.js";
import { CreateAccessTokenDocument } from "../../sdk/generated/graphql.js";
import { loadConfig } from "../../src/config.js";
import { admit, expectType } from "../support/fixtures.js";
import { haveChromium, launchChromium, openViewer, startViewerServer, type ViewerServer } from "../support/viewer-browser.js";
import { waitUntil } from "../support/wait.js";

async function readToken(client: DossierClient, runId: string) {
  const result = await client.request(CreateAccessTokenDocument, { input: { grants: [{ resourceId: runId, operations: ["READ", "SUBSCRIBE"] }] } });
  return expectType(result.createAccessToken, "CreateAccessTokenSuccess").token;
}

/** A site of another application: every path answers a page that frames `src` (set per page). */
async function startHost(): Promise<{ server: Server; origin: string; page(src: string): string }> {
  const pages = new Map<string, string>();
  const server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    response.end(
      `<!doctype html><title>host</title><iframe id="viewer" src="${pages.get(request.url ?? "") ?? "about:blank"}" width="1100" height="700"></iframe>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let n = 0;
  return {
    server,
    origin,
    page(src) {
      n += 1;
      pages.set(`/p${n}`, src);
      return `${origin}/p${n}`;
    },
  };
}

/** The viewer's frame once it has loaded something. */
async function viewerFrame(page: Page): Promise<Frame> {
  return waitUntil(async () => page.frames().find((frame) => frame !== page.mainFrame() && frame.url() !== "about:blank"));
}

describe("VIEWER_FRAME_ANCESTORS", () => {
  it("takes origins only, and names itself when refused", () => {
    expect(loadConfig({ VIEWER_FRAME_ANCESTORS: "https://app.example.com, http://localhost:5173" }).viewerFrameAncestors).toEqual([
      "https://app.example.com",
      "http://localhost:5173",
    ]);
    expect(loadConfig({}).viewerFrameAncestors).toEqual([]);
    for (const bad of ["https://app.example.com/embed", "app.example.com", "*", "'self'", "javascript:alert(1)"]) {
      expect(() => loadConfig({ VIEWER_FRAME_ANCESTORS: bad })).toThrow(/VIEWER_FRAME_ANCESTORS/);
    }
  });
});

describe.runIf(haveChromium)("the trace viewer embedded and handed a key or token", () => {
  let browser: Browser;
  let app: ViewerServer | undefined;
  const hosts: Server[] = [];
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());
  afterEach(async () => {
    await app?.close();
    app = undefined;
    for (const host of hosts.splice(0)) await new Promise((resolve) => host.close(resolve));
  });

  it("is framed by a listed origin, refused by another, and follows the token its framing page hands it", async () => {
    const allowed = await startHost();
    const other = await startHost();
    hosts.push(allowed.server, other.server);
    app = await startViewerServer([{ content: "done" }], [], { frameAncestors: [allowed.origin] });
    const client = app.t.as(app.key);
    const { run } = await admit(client, { question: "framed" });
    const token = await readToken(client, run.id);
    const bare = `http://127.0.0.1:${app.server.port}/traces/${encodeURIComponent(run.id)}`;

    // Framed without a credential: the viewer asks for one.
    const { page, errors, requests } = await openViewer(browser, allowed.page(bare));
    const frame = await viewerFrame(page);
    await frame.waitForSelector("body[data-connection=refused]", { timeout: 15_000 });
    expect(await frame.isVisible("[data-testid=key-form]")).toBe(true);
    await frame.evaluate(() => Object.assign(window, { sameDocument: true }));
    // The framing page hands it a token through the fragment: no reload, the run shows.
    await page.evaluate((src) => {
      (document.getElementById("viewer") as HTMLIFrameElement).src = src;
    }, `${bare}#token=${token}`);
    await frame.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 15_000 });
    expect(await frame.textContent("[data-testid=answer]")).toBe("done");
    expect(await frame.isHidden("[data-testid=key-form]")).toBe(true);
    expect(await frame.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
    // The token went to the server in headers only, never in an address.
    expect(requests.filter((url) => url.includes(token))).toEqual([]);
    // 401s of the keyless start are the page asking; nothing else failed.
    expect(errors.filter((error) => !/\b401\b/.test(error))).toEqual([]);

    // Another origin's page cannot frame it: the frame never holds the viewer.
    const refused = await openViewer(browser, other.page(`${bare}#token=${token}`));
    const blocked = await viewerFrame(refused.page);
    await refused.page.waitForLoadState("load");
    await expect.poll(() => refused.errors.some((error) => error.includes("frame-ancestors"))).toBe(true);
    expect(await blocked.locator("[data-testid=run-status]").count()).toBe(0);
  }, 60_000);

  it("gives a page of another origin that opens it in a tab no handle to load it again with a key", async () => {
    const other = await startHost();
    hosts.push(other.server);
    app = await startViewerServer([{ content: "done" }]);
    const { run } = await admit(app.t.as(app.key), { question: "opened" });
    const bare = `http://127.0.0.1:${app.server.port}/traces/${encodeURIComponent(run.id)}`;
    const { page } = await openViewer(browser, other.page("about:blank"));
    const opened = page.context().waitForEvent("page");
    await page.evaluate((url) => Object.assign(window, { viewer: window.open(url, "_blank") }), bare);
    const viewer = await opened;
    await viewer.waitForSelector("body[data-connection=refused]", { timeout: 15_000 });
    await viewer.evaluate(() => Object.assign(window, { sameDocument: true }));
    // The opener's handle is closed: it can neither read the tab nor send it elsewhere.
    const handle = await page.evaluate((url) => {
      const tab = (window as unknown as { viewer: Window }).viewer;
      const closed = tab.closed;
      tab.location.href = `${url}?again#key=chosen-by-the-opener`;
      return { closed };
    }, bare);
    expect(handle).toEqual({ closed: true });
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 500)));
    expect(viewer.url()).toBe(bare);
    expect(await viewer.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
  }, 60_000);

  it("asks for a key or token when the run is not visible, takes one from the form, offers one a new fragment gives until it is chosen, and drops what another showed", async () => {
    app = await startViewerServer([{ content: "done" }]);
    const owner = app.t.as(app.key);
    const { run } = await admit(owner, { question: "mine" });
    const token = await readToken(owner, run.id);
    const stranger = await app.t.createPrincipal("stranger");
    const url = (hash: string) => `http://127.0.0.1:${app!.server.port}/traces/${encodeURIComponent(run.id)}#${hash}`;

    const { page, errors, requests } = await openViewer(browser, url(`key=${encodeURIComponent(stranger)}`));
    await page.waitForSelector("body[data-connection=refused]", { timeout: 15_000 });
    expect(await page.textContent("[data-testid=message]")).toContain("No run with this id is visible to this API key or access token");
    expect(page.url()).not.toContain("#key=");
    await page.evaluate(() => Object.assign(window, { sameDocument: true }));

    // The form: a token typed in shows the run.
    expect(await page.isVisible("[data-testid=key-form]")).toBe(true);
    await page.fill("#key-input", token);
    await page.click("#key-form button");
    await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 15_000 });
    expect(await page.textContent("[data-testid=answer]")).toBe("done");
    expect(await page.isHidden("[data-testid=key-form]")).toBe(true);
    expect(await page.locator("[data-testid=span]").count()).toBeGreaterThan(0);

    // A key put into this tab's fragment (as the page that opened the tab could, unseen) is not
    // taken silently: the run shown stays, nothing is sent with the key, and the form offers it.
    const sentWith: string[] = [];
    page.on("request", (request) => {
      if (request.headers().authorization === `Bearer ${stranger}`) sentWith.push(request.url());
    });
    const spans = await page.locator("[data-testid=span]").count();
    await page.evaluate(
      (hash) => {
        location.hash = hash;
      },
      `key=${encodeURIComponent(stranger)}`,
    );
    await expect.poll(() => page.textContent("[data-testid=message]")).toContain("The address gave another API key or access token");
    expect(page.url()).not.toContain("#key=");
    expect(await page.isVisible("[data-testid=key-form]")).toBe(true);
    expect(await page.getAttribute("body", "data-connection")).toBe("ended");
    expect(await page.locator("[data-testid=span]").count()).toBe(spans);
    expect(await page.textContent("[data-testid=answer]")).toBe("done");
    expect(sentWith).toEqual([]);
    // Chosen (Open), it is used: it cannot see the run, so what the token showed goes and the form comes back.
    await page.click("#key-form button");
    await page.waitForSelector("body[data-connection=refused]", { timeout: 15_000 });
    expect(sentWith.length).toBeGreaterThan(0);
    expect(await page.locator("[data-testid=span]").count()).toBe(0);
    expect(await page.isHidden("[data-testid=answer-box]")).toBe(true);
    expect(await page.textContent("[data-testid=run-status]")).toBe("unknown");
    expect(await page.isVisible("[data-testid=key-form]")).toBe(true);

    // And a token put into the fragment, once chosen, shows it again, still without a reload.
    await page.evaluate((hash) => {
      location.hash = hash;
    }, `token=${token}`);
    await expect.poll(() => page.textContent("[data-testid=message]")).toContain("The address gave another API key or access token");
    await page.click("#key-form button");
    await page.waitForSelector("body[data-connection=ended][data-run-status=SUCCEEDED]", { timeout: 15_000 });
    expect(page.url()).not.toContain("#token=");
    expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
    expect(requests.filter((address) => address.includes(token) || address.includes(encodeURIComponent(stranger)))).toEqual([]);
    expect(errors).toEqual([]);
  }, 60_000);
});
